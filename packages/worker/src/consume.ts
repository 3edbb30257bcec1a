import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  type CancelMessage,
  type ExecJob,
  type ExecOutcome,
  FINISHED_JOB_RETENTION_S,
  type HandlerConfig,
  JOB_LOCK_MS,
  MAX_STALLED,
  MESSAGING_SYSTEM_BULLMQ,
  OUTCOME_TTL_MS,
  parseQueuedJob,
  QUEUE_NAMES,
  type QueueClass,
  type QueuedJob,
  RESULTS_STREAM_TTL_MS,
  type RedisKeys,
  redisKeys,
  STALLED_INTERVAL_MS,
  STALLED_REASON,
  tryParseJson,
  WORKER_HEARTBEAT_MS,
  type WorkerAnnouncement,
} from '@tool-dispatch/shared';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { runJob } from './execute-job.js';
import type { WorkerMetrics } from './metrics.js';
import type { HandlerRegistry } from './registry.js';

export interface StartWorkerOptions {
  redisUrl: string;
  /** TD_PREFIX: BullMQ's prefix and the prefix of every key. */
  prefix: string;
  registry: HandlerRegistry;
  config: HandlerConfig;
  /** Concurrent-queue jobs at once (TD_WORKER_CONCURRENCY); the serial queue is always 1. */
  concurrency: number;
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
}

export interface RunningWorker {
  readonly id: string;
  /** Stops taking jobs, lets the active ones finish and report, then leaves. */
  close(): Promise<void>;
}

const QUEUE_CLASSES = ['concurrent', 'serial'] as const satisfies readonly QueueClass[];
/** Results streams are capped (approximately) so a coordinator that never reads cannot grow one forever. */
const RESULTS_STREAM_MAXLEN = 100_000;

/**
 * Starts a worker process's consumers: the concurrent queue (`concurrency` at once) and the
 * serial queue (one at a time), each job run through `runJob` and its outcome reported to the
 * owning coordinator's results stream. Resolves once both consumers and the cancel
 * subscription are ready and the worker has announced itself.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const resolved = resolveStartWorkerOptions(options);
  const { id, prefix, registry, config, metrics, onError } = resolved;
  const keys = redisKeys(prefix);
  // BullMQ workers block on their connection and need maxRetriesPerRequest: null (retry forever).
  const redis = new Redis(resolved.redisUrl, { maxRetriesPerRequest: null });
  const subscriber = redis.duplicate();
  redis.on('error', onError);
  subscriber.on('error', onError);
  const reporter = new Reporter(redis, keys);
  const startedAt = Date.now();

  const consumers = new Map<QueueClass, Worker>();
  for (const queue of QUEUE_CLASSES) {
    const processCall = async (bullJob: Job, _token?: string, signal?: AbortSignal): Promise<ExecOutcome> => {
      const queued = parseQueuedJob(bullJob.data);
      const jobId = bullJob.id;
      if (!queued || jobId === undefined) throw new UnrecoverableError('not a tool-dispatch job payload');
      const outcome = await runQueued(queued.job, jobId, signal ?? new AbortController().signal);
      await reporter.report(queued, jobId, outcome);
      return outcome;
    };
    const consumer = new Worker(QUEUE_NAMES[queue], processCall, {
      connection: redis,
      prefix,
      name: id,
      concurrency: queue === 'serial' ? 1 : resolved.concurrency,
      lockDuration: resolved.lockDurationMs,
      stalledInterval: resolved.stalledIntervalMs,
      // DESIGN.md failure semantics: concurrent calls are retried once on worker death, serial never.
      maxStalledCount: MAX_STALLED[queue],
      removeOnComplete: { age: FINISHED_JOB_RETENTION_S },
      removeOnFail: { age: OUTCOME_TTL_MS / 1000 },
    });
    consumer.on('error', onError);
    consumer.on('failed', function reportFailedJob(bullJob, error) {
      if (bullJob) reporter.reportFailure(bullJob, error, queue).catch(onError);
    });
    consumers.set(queue, consumer);
  }

  async function runQueued(job: ExecJob, jobId: string, signal: AbortSignal): Promise<ExecOutcome> {
    // A cancel that came before this worker took the job (the pub/sub message found nobody).
    if ((await redis.exists(keys.cancel(job.session, jobId))) === 1) {
      return {
        status: 'error',
        code: 'cancelled',
        message: 'the call was cancelled before it started',
        durationMs: 0,
        ranOn: id,
      };
    }
    // Messaging semantic conventions on the execute span: this call came off a BullMQ queue.
    const spanAttributes = {
      [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM_BULLMQ,
      [ATTR_MESSAGING_DESTINATION_NAME]: QUEUE_NAMES[job.queue],
      [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
      [ATTR_MESSAGING_OPERATION_NAME]: 'process',
      [ATTR_MESSAGING_MESSAGE_ID]: jobId,
    };
    const run = () => runJob(registry, job, signal, config, id, { spanAttributes });
    return metrics ? metrics.track(job.queue, job.name, run) : run();
  }

  subscriber.on('message', function onCancelMessage(channel: string, message: string) {
    if (channel !== keys.cancelChannel()) return;
    const cancel = tryParseJson(message) as CancelMessage | undefined;
    if (!cancel || typeof cancel.jobId !== 'string') return;
    consumers.get(cancel.queue)?.cancelJob(cancel.jobId, 'cancelled by the coordinator');
  });
  await subscriber.subscribe(keys.cancelChannel());
  await Promise.all([...consumers.values()].map((c) => c.waitUntilReady()));

  const announce = () => {
    const now = Date.now();
    const announcement: WorkerAnnouncement = {
      id,
      handlers: registry.names(),
      concurrency: resolved.concurrency,
      pid: process.pid,
      host: hostname(),
      startedAt,
      at: now,
    };
    const ttl = resolved.heartbeatMs * 3;
    return redis
      .multi()
      .set(keys.worker(id), JSON.stringify(announcement), 'PX', ttl)
      .zadd(keys.workersAlive(), now + ttl, id)
      .zremrangebyscore(keys.workersAlive(), '-inf', now)
      .pexpire(keys.workersAlive(), Math.max(ttl * 10, 60_000))
      .exec();
  };
  await announce();
  const heartbeat = setInterval(function heartbeatWorker() {
    announce().catch(onError);
  }, resolved.heartbeatMs);

  let closing: Promise<void> | undefined;
  return {
    id,
    close: () => {
      closing ??= (async () => {
        // Still announced while active jobs finish, so coordinators keep counting this worker.
        await Promise.all([...consumers.values()].map((c) => c.close()));
        clearInterval(heartbeat);
        await redis
          .multi()
          .zrem(keys.workersAlive(), id)
          .del(keys.worker(id))
          .exec()
          .catch(() => undefined);
        subscriber.disconnect();
        await redis.quit().catch(() => redis.disconnect());
      })();
      return closing;
    },
  };
}

type ResolvedStartWorkerOptions = Required<Omit<StartWorkerOptions, 'metrics'>> & {
  metrics: WorkerMetrics | undefined;
};

function resolveStartWorkerOptions(options: StartWorkerOptions): ResolvedStartWorkerOptions {
  const resolved = {
    ...options,
    id:
      options.id ?? `w-${hostname().replace(/[^A-Za-z0-9_.-]/g, '_')}-${process.pid}-${randomBytes(3).toString('hex')}`,
    metrics: options.metrics,
    lockDurationMs: options.lockDurationMs ?? JOB_LOCK_MS,
    stalledIntervalMs: options.stalledIntervalMs ?? STALLED_INTERVAL_MS,
    heartbeatMs: options.heartbeatMs ?? WORKER_HEARTBEAT_MS,
    onError: options.onError ?? (() => {}),
  };
  if (!Number.isInteger(resolved.concurrency) || resolved.concurrency < 1) {
    throw new Error(`worker concurrency must be a positive integer, got ${resolved.concurrency}`);
  }
  if (resolved.id.includes(':')) throw new Error(`worker id ${resolved.id} must not contain ':'`);
  for (const k of ['lockDurationMs', 'stalledIntervalMs', 'heartbeatMs'] as const) {
    if (!(resolved[k] > 0)) throw new Error(`${k} must be positive, got ${resolved[k]}`);
  }
  return resolved;
}

/** Records an outcome once (outcome key, SET NX) and sends it to the owning coordinator. */
class Reporter {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async report(queued: QueuedJob, jobId: string, outcome: ExecOutcome): Promise<void> {
    const json = JSON.stringify(outcome);
    const first = await this.redis.set(this.keys.outcome(queued.job.session, jobId), json, 'PX', OUTCOME_TTL_MS, 'NX');
    // An outcome is already recorded (an earlier attempt, or a worker_lost verdict): that one stands.
    if (first === null) return;
    await this.redis
      .multi()
      .xadd(queued.replyTo, 'MAXLEN', '~', RESULTS_STREAM_MAXLEN, '*', 'job', jobId, 'outcome', json)
      .pexpire(queued.replyTo, RESULTS_STREAM_TTL_MS)
      .exec();
  }

  /**
   * A job BullMQ failed without our processor's outcome: it stalled past its limit (its worker
   * died), or the processor could not report. Serial calls are never re-run (DESIGN.md).
   */
  async reportFailure(bullJob: Job, error: Error, queue: QueueClass): Promise<void> {
    const queued = parseQueuedJob(bullJob.data);
    if (!queued || bullJob.id === undefined) return;
    const lost = error.message === STALLED_REASON;
    const message = !lost
      ? `the worker could not finish the job: ${error.message}`
      : queue === 'serial'
        ? `the worker running ${queued.job.name} died; the outcome is unknown and the call was not re-run`
        : `the worker running ${queued.job.name} died, and again after one retry; the outcome is unknown`;
    const outcome: ExecOutcome = {
      status: 'error',
      code: lost ? 'worker_lost' : 'handler_error',
      message,
      durationMs: bullJob.processedOn ? Math.max(0, Date.now() - bullJob.processedOn) : 0,
    };
    await this.report(queued, bullJob.id, outcome);
  }
}
