import type { ExecOutcome, QueueClass } from '@tool-dispatch/shared';
import { encodeQueuedJob, MAX_STARTS, type RedisClient, redisKeys, shardQueueNames } from '@tool-dispatch/shared/redis';
import { type Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { until } from '../../../../test/support/until.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { queuedJobOf } from '../../testing/queued-job.js';
import { startConsumers } from './consumers.js';
import type { WatchedConsumer } from './stuck-consumers.js';

// DESIGN.md failure semantics on real BullMQ: a concurrent job whose processor failed (Redis timed
// out a report or a move: handler errors are outcomes, never failures) is started once more, a
// serial one never; the failure handler hears only the last failure (finishedOn set).
let url = '';
useRedis((server) => {
  url = server.url;
});

const open: Array<{ consumers: WatchedConsumer[]; queue: Queue; redis: Redis }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await Promise.all(o.consumers.map((c) => c.worker.close(true)));
    await o.queue.close();
    o.redis.disconnect();
  }
});

/** One worker's consumers over a fresh prefix; `fails(start)` says whether the processor's nth start throws. */
function consumersOf(fails: (start: number) => boolean) {
  const prefix = randomPrefix();
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const starts: Record<QueueClass, number> = { concurrent: 0, serial: 0 };
  const failures: Array<{ queue: string; final: boolean }> = [];
  const consumers = startConsumers({
    redis: redis as unknown as RedisClient,
    prefix,
    id: 'w-retry',
    limits: { concurrent: 1, serial: 1 },
    queueShards: 1,
    lockDurationMs: 5_000,
    stalledIntervalMs: 5_000,
    onError: () => undefined,
    process: async (queue): Promise<Record<string, ExecOutcome>> => {
      starts[queue]++;
      if (fails(starts[queue])) throw new Error('Command timed out');
      return {};
    },
    onFailed: (job: Job) => failures.push({ queue: job.queueName, final: job.finishedOn !== undefined }),
  });
  return { prefix, redis, starts, failures, consumers };
}

async function add(c: ReturnType<typeof consumersOf>, cls: QueueClass): Promise<Job> {
  const queue = new Queue(shardQueueNames(cls, 1)[0] as string, { connection: c.redis, prefix: c.prefix });
  open.push({ consumers: c.consumers, queue, redis: c.redis });
  // The coordinator's enqueue: attempts by class (queue-executor's addCarrier).
  const queued = queuedJobOf(redisKeys(c.prefix), 'calculate', [{}]);
  const data = encodeQueuedJob({ ...queued, calls: queued.calls.map((call) => ({ ...call, queue: cls })) });
  return queue.add('t', data, { attempts: MAX_STARTS[cls] });
}

describe('a job whose processor failed', () => {
  it('is started once more when concurrent, and answered by that start', async () => {
    const c = consumersOf((n) => n === 1);
    const job = await add(c, 'concurrent');
    await until(async () => (await job.isCompleted()) || undefined, { what: 'the job completed on its second start' });
    expect(c.starts.concurrent).toBe(2);
    expect(c.failures).toEqual([expect.objectContaining({ final: false })]);
  });

  it('is started at most twice when concurrent, and only its last failure is final', async () => {
    const c = consumersOf(() => true);
    const job = await add(c, 'concurrent');
    await until(async () => (await job.isFailed()) || undefined, { what: 'the job failed for good' });
    expect(c.starts.concurrent).toBe(MAX_STARTS.concurrent);
    expect(c.failures.map((f) => f.final)).toEqual([false, true]);
  });

  it('is never started again when serial', async () => {
    const c = consumersOf(() => true);
    const job = await add(c, 'serial');
    await until(async () => (await job.isFailed()) || undefined, { what: 'the serial job failed' });
    expect(c.starts.serial).toBe(1);
    expect(c.failures.map((f) => f.final)).toEqual([true]);
  });
});
