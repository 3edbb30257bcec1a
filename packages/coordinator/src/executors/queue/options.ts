import type { RedisConnectionOptions, RedisTarget } from '@tool-dispatch/shared/redis';

export interface QueueExecutorOptions {
  /** One Redis (REDIS_URL); or `target`. */
  redisUrl?: string;
  /** One Redis or a cluster (REDIS_CLUSTER_NODES); wins over redisUrl. */
  target?: RedisTarget;
  /** TLS and the like for every connection (`redisConnectionOptions`); duplicates inherit it. */
  connection?: RedisConnectionOptions;
  /** TD_PREFIX: BullMQ's prefix and the prefix of every key. */
  prefix: string;
  /** Names this coordinator's results stream; default `c-<host>-<pid>-<random>`, no colons. */
  coordinatorId?: string;
  /** How often calls waiting longer than this are checked against Redis (safety net; default 1 s). */
  pollIntervalMs?: number;
  /**
   * How long past a call's deadline the coordinator keeps waiting before it decides for itself
   * (default: enough for a dead worker's lock to expire and the stalled check to notice twice).
   */
  overdueGraceMs?: number;
  /** How long handlerNames() reuses what it read before reading again (default 1 s). */
  handlerCacheMs?: number;
  /** Called with infrastructure errors it recovers from (Redis reconnecting and the like). */
  onError?: (error: Error) => void;
  /**
   * TD_QUEUE_SHARDS (default 1): each queue is this many BullMQ queues, each its own hash slot; a
   * run's jobs all go to the shard `shardOf` its session and run.
   */
  queueShards?: number;
  /** TD_JOB_NAME: each job's name from `{tools}`, `{session}`, `{run}`, `{round}`, `{queue}` (default `{tools}`). */
  jobName?: string;
  /**
   * TD_JOB_CALLS: the most calls one job carries, over every run sharing it, 1..MAX_CALLS_PER_JOB
   * (default DEFAULT_JOB_CALLS); 1 sends every call as a job of its own.
   */
  jobCalls?: number;
  /** Where a live worker consuming another number of shards is said (once per worker); default onError. */
  onShardMismatch?: (line: string) => void;
  /** How long BullMQ keeps a completed job (TD_FINISHED_JOB_RETENTION_MS; default FINISHED_JOB_RETENTION_S). */
  finishedJobRetentionMs?: number;
  /** How long a committed round's outcome hashes stay (TD_OUTCOME_AFTER_COMMIT_TTL_MS; default OUTCOME_AFTER_COMMIT_TTL_MS). */
  outcomeAfterCommitTtlMs?: number;
  /**
   * Whether a job lost with the Redis primary that held it (gone from the queue, no outcome) is
   * enqueued again when its calls never started (TD_REDIS_REPLICA_ACKS ≥ 1, where a side effect's
   * start is acknowledged by the replicas before it runs, so a start that is not there never
   * happened). Default false: such a call ends `worker_lost` once every attempt's deadline passed.
   */
  resendLostJobs?: boolean;
}
