import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { HandlerConfig } from '@tool-dispatch/shared';
import { DEFAULT_WORKER_SERIAL_CONCURRENCY } from '@tool-dispatch/shared';
import {
  JOB_LOCK_MS,
  type RedisConnectionOptions,
  type RedisTarget,
  STALLED_INTERVAL_MS,
  WORKER_HEARTBEAT_MS,
} from '@tool-dispatch/shared/redis';
import type { McpHub } from '../mcp/hub.js';
import type { WorkerMetrics } from '../metrics.js';
import type { HandlerRegistry } from '../registry.js';

export interface StartWorkerOptions {
  /** One Redis (REDIS_URL); ignored when `target` is given. */
  redisUrl: string;
  /** One Redis or a cluster (REDIS_CLUSTER_NODES). */
  target?: RedisTarget;
  /** TLS and the like for every connection (`redisConnectionOptions`); BullMQ's duplicates inherit it. */
  connection?: RedisConnectionOptions;
  /** TD_PREFIX: BullMQ's prefix and the prefix of every key. */
  prefix: string;
  registry: HandlerRegistry;
  config: HandlerConfig;
  /**
   * Concurrent-queue calls running at once (TD_WORKER_CONCURRENCY), and jobs taken at once (a job
   * carries one call or a batch of one round's calls).
   */
  concurrency: number;
  /**
   * Serial-queue jobs running at once (TD_WORKER_SERIAL_CONCURRENCY, default 8), each one call.
   * They are of different runs: the coordinator never has two serial calls of a run in flight.
   */
  serialConcurrency?: number;
  /**
   * TD_QUEUE_SHARDS (default 1): it consumes every shard of each queue, a BullMQ worker per shard,
   * the class's job limit split between them; its calls stay capped at `concurrency` and
   * `serialConcurrency` over all shards.
   */
  queueShards?: number;
  /** Where a TD_QUEUE_SHARDS mismatch with the deployment's record is said at start. */
  log?: (line: string) => void;
  /** Defaults to `w-<host>-<pid>-<random>`; no colons. */
  id?: string;
  metrics?: WorkerMetrics;
  /** Lock of an active job (default JOB_LOCK_MS); a dead worker's jobs stall after it. */
  lockDurationMs?: number;
  /** Stalled-job check period (default STALLED_INTERVAL_MS). */
  stalledIntervalMs?: number;
  /** Liveness announcement period (default WORKER_HEARTBEAT_MS); the announcement lives 3 periods. */
  heartbeatMs?: number;
  /** Called with infrastructure errors (Redis, BullMQ); they never end the worker. */
  onError?: (error: Error) => void;
  /**
   * The process's MCP servers (TD_MCP_CONFIG): their tools and states go out with every
   * announcement, and a change (a server up or down, a `list_changed`) is announced at once.
   * The registry must have it as a source (`registry.addSource`).
   */
  mcp?: McpHub;
  /**
   * TD_REDIS_REPLICA_ACKS and TD_REDIS_WAIT_MS (API.md v1.2 durability points): a serial call's
   * start mark is acknowledged by this many replicas before the call runs; unacknowledged, it
   * does not run and ends `error`/`unavailable`. Absent or 0 acks: no WAIT.
   */
  durability?: { acks: number; waitMs: number };
}

export interface RunningWorker {
  readonly id: string;
  /** Stops taking jobs, lets the active ones finish and report, then leaves. */
  close(): Promise<void>;
}

export type ResolvedStartWorkerOptions = Required<
  Omit<StartWorkerOptions, 'metrics' | 'mcp' | 'target' | 'durability'>
> & {
  durability: StartWorkerOptions['durability'];
  metrics: WorkerMetrics | undefined;
  mcp: McpHub | undefined;
  target: RedisTarget | undefined;
};

/** The options with their defaults; throws naming the first one out of range. */
export function resolveStartWorkerOptions(options: StartWorkerOptions): ResolvedStartWorkerOptions {
  const resolved = {
    ...options,
    id:
      options.id ?? `w-${hostname().replace(/[^A-Za-z0-9_.-]/g, '_')}-${process.pid}-${randomBytes(3).toString('hex')}`,
    metrics: options.metrics,
    mcp: options.mcp,
    target: options.target,
    durability: options.durability,
    connection: options.connection ?? {},
    serialConcurrency: options.serialConcurrency ?? DEFAULT_WORKER_SERIAL_CONCURRENCY,
    queueShards: options.queueShards ?? 1,
    log: options.log ?? (() => {}),
    lockDurationMs: options.lockDurationMs ?? JOB_LOCK_MS,
    stalledIntervalMs: options.stalledIntervalMs ?? STALLED_INTERVAL_MS,
    heartbeatMs: options.heartbeatMs ?? WORKER_HEARTBEAT_MS,
    onError: options.onError ?? (() => {}),
  };
  for (const k of ['concurrency', 'serialConcurrency', 'queueShards'] as const) {
    if (!Number.isInteger(resolved[k]) || resolved[k] < 1) {
      throw new Error(`worker ${k} must be a positive integer, got ${resolved[k]}`);
    }
  }
  if (resolved.id.includes(':')) throw new Error(`worker id ${resolved.id} must not contain ':'`);
  for (const k of ['lockDurationMs', 'stalledIntervalMs', 'heartbeatMs'] as const) {
    if (!(resolved[k] > 0)) throw new Error(`${k} must be positive, got ${resolved[k]}`);
  }
  return resolved;
}
