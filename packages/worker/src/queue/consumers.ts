import type { ExecOutcome, QueueClass } from '@tool-dispatch/shared';
import {
  commandTimeoutOf,
  FINISHED_JOB_RETENTION_S,
  MAX_STALLED,
  MAX_STARTS,
  OUTCOME_TTL_MS,
  parseQueuedJob,
  type QueuedJob,
  type RedisClient,
  shardQueueNames,
} from '@tool-dispatch/shared/redis';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { fenceTimingOf, JobFence } from './fencing.js';
import type { TakenCarrier } from './run-queued-job.js';
import type { WatchedConsumer } from './stuck-consumers.js';

export const QUEUE_CLASSES = ['concurrent', 'serial'] as const satisfies readonly QueueClass[];

/** What the consumers need: the connection and names, the limits, and what to do with a job. */
export interface ConsumersContext {
  readonly redis: RedisClient;
  /** BullMQ's key prefix (TD_PREFIX). */
  readonly prefix: string;
  /** The worker's id: BullMQ's worker name. */
  readonly id: string;
  /** Jobs taken at once per class, over all shards. */
  readonly limits: Readonly<Record<QueueClass, number>>;
  readonly queueShards: number;
  readonly lockDurationMs: number;
  readonly stalledIntervalMs: number;
  readonly onError: (error: Error) => void;
  /** Runs a job's calls; `job` is the BullMQ job (attempts, stalls) behind `queued`. */
  readonly process: (
    queue: QueueClass,
    queued: QueuedJob,
    carrier: TakenCarrier,
    signal: AbortSignal,
    job: Job,
  ) => Promise<Record<string, ExecOutcome>>;
  /** A job BullMQ failed without the processor's outcomes (stalled past its limit, or a report that failed). */
  readonly onFailed: (job: Job, error: Error) => void;
}

/**
 * The worker's BullMQ consumers: one per shard of each queue class, the class's job limit split
 * between them (`shareOf`). Each counts its active jobs for the stuck-consumer watch.
 */
export function startConsumers(context: ConsumersContext): WatchedConsumer[] {
  const consumers: WatchedConsumer[] = [];
  for (const queue of QUEUE_CLASSES) {
    const names = shardQueueNames(queue, context.queueShards);
    for (const [shard, name] of names.entries()) {
      // A serial job is one call, so for the serial queue jobs and slots are the same number.
      const concurrency = shareOf(context.limits[queue], shard, names.length);
      consumers.push(consumerOf(context, queue, name, concurrency));
    }
  }
  return consumers;
}

function consumerOf(context: ConsumersContext, queue: QueueClass, name: string, concurrency: number): WatchedConsumer {
  const timing = fenceTimingOf(context.lockDurationMs);
  const make = (): Worker => {
    // Asked only after a refused renewal: does Redis still have the job (its hash)?
    const fence: JobFence = new JobFence(timing, async (id: string): Promise<boolean> => {
      return (await context.redis.exists(worker.toKey(id))) === 1;
    });
    const worker: Worker = new Worker(
      name,
      async function takeJob(bullJob: Job, _token?: string, signal?: AbortSignal) {
        consumer.active++;
        consumer.takenAt = Date.now();
        // Stopped by BullMQ (its signal) or by the fence: a lock this worker could not renew.
        const fenced = fence.track(bullJob);
        try {
          return await processJob(context, queue, bullJob, signal ? AbortSignal.any([signal, fenced]) : fenced);
        } finally {
          fence.untrack(bullJob);
          consumer.active--;
        }
      },
      {
        connection: context.redis,
        // The queue names carry hash tags: each queue's keys are one Redis Cluster slot.
        prefix: context.prefix,
        name: context.id,
        concurrency,
        lockDuration: context.lockDurationMs,
        // Renewed often enough that a fence well before the lock's end never stops a healthy worker.
        lockRenewTime: timing.renewEveryMs,
        stalledInterval: context.stalledIntervalMs,
        // DESIGN.md failure semantics: concurrent calls are retried once on worker death, serial never.
        maxStalledCount: MAX_STALLED[queue],
        // ...and a concurrent job is started at most twice in all (MAX_STARTS), whatever ended the first.
        maxStartedAttempts: MAX_STARTS[queue],
        removeOnComplete: { age: FINISHED_JOB_RETENTION_S },
        removeOnFail: { age: OUTCOME_TTL_MS / 1000 },
        ...drainDelayOf(commandTimeoutOf(context.redis)),
      },
    );
    fence.watch(worker);
    worker.on('closed', () => fence.close());
    worker.on('error', context.onError);
    worker.on('failed', function reportFailedJob(bullJob, error) {
      if (bullJob) context.onFailed(bullJob, error);
    });
    return worker;
  };
  // `make`'s processor counts on `consumer`, which exists before any job can arrive.
  const consumer: WatchedConsumer = {
    queueName: name,
    concurrency,
    active: 0,
    takenAt: Date.now(),
    worker: make(),
    make,
  };
  return consumer;
}

function processJob(
  context: ConsumersContext,
  queue: QueueClass,
  bullJob: Job,
  signal: AbortSignal | undefined,
): Promise<Record<string, ExecOutcome>> {
  const queued = parseQueuedJob(bullJob.data);
  const carrierId = bullJob.id;
  if (!queued || carrierId === undefined) throw new UnrecoverableError('not a tool-dispatch job payload');
  const carrier: TakenCarrier = { id: carrierId, addedAtMs: bullJob.timestamp, queueName: bullJob.queueName };
  return context.process(queue, queued, carrier, signal ?? new AbortController().signal, bullJob);
}

/**
 * A shard's part of a class's job limit: `limit` split as evenly as it goes (the first shards take
 * the remainder), at least 1 each, so the worker takes about `limit` jobs over all shards.
 */
export function shareOf(limit: number, shard: number, shards: number): number {
  return Math.max(1, Math.floor(limit / shards) + (shard < limit % shards ? 1 : 0));
}

/**
 * BullMQ's blocking fetch (BZPOPMIN) runs on a duplicate of the worker's connection, so it has
 * that connection's command deadline (TD_REDIS_COMMAND_TIMEOUT_MS): it blocks for half of it
 * (BullMQ's drainDelay, in seconds) so an idle wait never ends "Command timed out".
 */
function drainDelayOf(commandTimeoutMs: number | undefined): { drainDelay?: number } {
  return commandTimeoutMs === undefined ? {} : { drainDelay: commandTimeoutMs / 2000 };
}
