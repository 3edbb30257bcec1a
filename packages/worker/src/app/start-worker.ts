import type { QueueClass } from '@tool-dispatch/shared';
import {
  checkDeployment,
  coalesceWrites,
  connectRedis,
  duplicateClient,
  type QueuedJob,
  type RedisClient,
  type RedisKeys,
  redisKeys,
} from '@tool-dispatch/shared/redis';
import { Announcer } from '../queue/announcer.js';
import { startConsumers } from '../queue/consumers.js';
import { CoordinatorChannel } from '../queue/coordinator-channel.js';
import { Questions } from '../queue/questions.js';
import { Reporter } from '../queue/reporter.js';
import { runQueuedCall } from '../queue/run-call.js';
import { needsStartCheck, type QueuedCall, runQueuedJob, type TakenCarrier } from '../queue/run-queued-job.js';
import { RunningCalls } from '../queue/running-calls.js';
import { StuckConsumerWatch, type WatchedConsumer } from '../queue/stuck-consumers.js';
import { Slots } from '../support/slots.js';
import {
  type ResolvedStartWorkerOptions,
  type RunningWorker,
  resolveStartWorkerOptions,
  type StartWorkerOptions,
} from './options.js';

/**
 * Starts a worker process's consumers: the concurrent queue (`concurrency` calls at once) and the
 * serial queue (`serialConcurrency` calls at once, of different runs). Each job's calls are run
 * through `runJob` and each outcome is reported to the owning coordinator's results stream as soon
 * as it is known. Resolves once both consumers and the cancel subscription are ready and the
 * worker has announced itself. Composition only: each part is in `queue/`.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const resolved = resolveStartWorkerOptions(options);
  const { id, prefix, registry, metrics, onError } = resolved;
  // Every handler's counts show from the first scrape, at 0 (not "No data" on a dashboard).
  metrics?.knownTools(registry.names());
  const { redis, subscriber, keys } = connect(resolved);
  const running = new RunningCalls();
  const reporter = new Reporter({ redis, keys, durability: resolved.durability });
  const channel = new CoordinatorChannel({ redis, subscriber, keys, running, questions: new Questions(redis, keys) });
  const slots: Record<QueueClass, Slots> = {
    concurrent: new Slots(resolved.concurrency),
    serial: new Slots(resolved.serialConcurrency),
  };
  const callContext = { id, registry, config: resolved.config, slots, metrics };
  const jobContext = {
    id,
    running,
    start: reporter.start.bind(reporter),
    reportFor: reporter.forJob.bind(reporter),
    runCall: (call: QueuedCall, queued: QueuedJob, carrier: TakenCarrier) =>
      runQueuedCall(callContext, call, carrier, channel.askerFor(queued.replyTo, call)),
  };
  const consumers = startConsumers({
    redis,
    prefix,
    id,
    limits: { concurrent: resolved.concurrency, serial: resolved.serialConcurrency },
    queueShards: resolved.queueShards,
    lockDurationMs: resolved.lockDurationMs,
    stalledIntervalMs: resolved.stalledIntervalMs,
    onError,
    process: (queue, queued, carrier, signal, bullJob) =>
      runQueuedJob(jobContext, queued, carrier, signal, needsStartCheck(queue, bullJob, queued)),
    onFailed: (bullJob, error) => {
      reporter.reportFailure(bullJob, error).catch(onError);
    },
  });
  const stuck = new StuckConsumerWatch({ redis, prefix, consumers, log: resolved.log, onError });
  const announcer = announcerOf(resolved, redis, keys);
  try {
    await channel.listen();
    await Promise.all(consumers.map((c) => c.worker.waitUntilReady()));
    const mismatch = await checkDeployment(redis, keys, { queueShards: resolved.queueShards, id, writer: false });
    if (mismatch) resolved.log(mismatch);
    await announcer.start();
  } catch (e) {
    // A start Redis refused leaves nothing behind: no consumer taking jobs, no connection open.
    await abandon({ redis, subscriber, announcer, stuck, consumers });
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    id,
    close: () => {
      closing ??= closeInOrder({ redis, subscriber, announcer, stuck, consumers });
      return closing;
    },
  };
}

/** The announcer of what this worker runs (its handlers, limits, MCP tools), for coordinators. */
function announcerOf(resolved: ResolvedStartWorkerOptions, redis: RedisClient, keys: RedisKeys): Announcer {
  const { id, registry, concurrency, serialConcurrency, queueShards, heartbeatMs, mcp, onError } = resolved;
  const handlerNames = () => registry.names();
  return new Announcer({
    redis,
    keys,
    id,
    handlerNames,
    concurrency,
    serialConcurrency,
    queueShards,
    heartbeatMs,
    mcp,
    onError,
  });
}

/** The worker's connections: one for BullMQ and the scripts, a subscriber for cancels and answers. */
function connect(resolved: ResolvedStartWorkerOptions): {
  redis: RedisClient;
  subscriber: RedisClient;
  keys: RedisKeys;
} {
  const keys = redisKeys(resolved.prefix);
  // BullMQ workers block on their connection and need maxRetriesPerRequest: null (retry forever).
  const target = resolved.target ?? { url: resolved.redisUrl };
  const redis = connectRedis(target, { ...resolved.connection, maxRetriesPerRequest: null });
  // BullMQ's job moves and our start checks and reports of one burst go out in one socket write.
  coalesceWrites(redis);
  const subscriber = duplicateClient(redis);
  redis.on('error', resolved.onError);
  subscriber.on('error', resolved.onError);
  return { redis, subscriber, keys };
}

/** What a started worker holds open, closed in the reverse of their start. */
interface WorkerParts {
  redis: RedisClient;
  subscriber: RedisClient;
  announcer: Announcer;
  stuck: StuckConsumerWatch;
  consumers: readonly WatchedConsumer[];
}

/** Drops a worker whose start failed: its consumers closed without waiting for jobs, its connections cut. */
async function abandon(parts: WorkerParts): Promise<void> {
  const { redis, subscriber, announcer, stuck, consumers } = parts;
  announcer.quiet();
  stuck.stop();
  await Promise.all(consumers.map((c) => c.worker.close(true).catch(() => undefined)));
  await announcer.withdraw().catch(() => undefined);
  subscriber.disconnect();
  redis.disconnect();
}

/** Closes the worker's parts in the reverse of their start: it stops taking jobs, lets the active ones finish, then leaves. */
async function closeInOrder(parts: WorkerParts): Promise<void> {
  const { redis, subscriber, announcer, stuck, consumers } = parts;
  // Still announced while active jobs finish, so coordinators keep counting this worker.
  announcer.quiet();
  stuck.stop();
  await Promise.all(consumers.map((c) => c.worker.close()));
  // A replaced consumer's close may never settle (its connection is what got stuck).
  for (const w of stuck.retired) w.disconnect().catch(() => undefined);
  await announcer.withdraw();
  subscriber.disconnect();
  await redis.quit().catch(() => redis.disconnect());
}
