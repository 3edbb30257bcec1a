import type { ExecOutcome } from '@tool-dispatch/shared';
import {
  callIdFor,
  parseResultsEntry,
  type QueuedJob,
  type RedisClient,
  type RedisKeys,
  redisKeys,
} from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { queuedJobOf } from '../../testing/queued-job.js';
import { HandlerRegistry } from '../registry.js';
import { FencedAbort } from '../support/fenced.js';
import { Slots } from '../support/slots.js';
import { Reporter } from './reporter.js';
import { runQueuedCall } from './run-call.js';
import { runQueuedJob } from './run-queued-job.js';
import { RunningCalls } from './running-calls.js';

// A job its fence stopped (fencing.ts), through the real runQueuedJob, reporter and Redis: its
// call ends worker_lost (outcome unknown), reported for a serial call, and for a concurrent one
// only returned (its stalled job runs again elsewhere).
let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

function contextOf(keys: RedisKeys, stopped: string[]) {
  const registry = new HandlerRegistry();
  registry.register('wait', (_args, ctx) => {
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        stopped.push(String((ctx.signal.reason as Error).name));
        reject(ctx.signal.reason);
      }),
    );
  });
  const reporter = new Reporter({ redis: redis as unknown as RedisClient, keys });
  const callContext = {
    id: 'w-fenced',
    registry,
    config: { httpAllow: [], searchUrl: undefined },
    slots: { concurrent: new Slots(2), serial: new Slots(2) },
    metrics: undefined,
  };
  return {
    id: 'w-fenced',
    running: new RunningCalls(),
    start: reporter.start.bind(reporter),
    reportFor: reporter.forJob.bind(reporter),
    runCall: (call: Parameters<typeof runQueuedCall>[1], _q: QueuedJob, carrier: Parameters<typeof runQueuedCall>[2]) =>
      runQueuedCall(callContext, call, carrier, async () => ({ error: 'no questions here' })),
  };
}

async function fencedRun(queue: 'serial' | 'concurrent') {
  const keys = redisKeys(randomPrefix());
  const base = queuedJobOf(keys, 'wait', [{}]);
  const queued: QueuedJob = { ...base, calls: base.calls.map((c) => ({ ...c, queue })) };
  const id = callIdFor(queued.calls[0]?.round as string, 0);
  const stopped: string[] = [];
  const fence = new AbortController();
  setTimeout(() => fence.abort(new FencedAbort('the worker lost its hold on job j-1: no renewal', 2_600)), 100);
  const carrier = { id: 'j-1', addedAtMs: Date.now(), queueName: 'q' };
  const outcomes = await runQueuedJob(contextOf(keys, stopped), queued, carrier, fence.signal, true);
  const sent = (await redis.xrange(queued.replyTo, '-', '+')).flatMap(([, f]) => parseResultsEntry(f));
  return { outcome: outcomes[id] as ExecOutcome, stopped, sent, recorded: await redis.get(keys.outcome('c-1', id)) };
}

describe('a job stopped by its fence', () => {
  it('stops a serial call with the fence’s reason and reports it worker_lost, outcome unknown', async () => {
    const { outcome, stopped, sent, recorded } = await fencedRun('serial');
    expect(stopped).toEqual(['FencedAbort']);
    expect(outcome).toMatchObject({ status: 'error', code: 'worker_lost', ranOn: 'w-fenced' });
    expect(outcome.status === 'error' && outcome.message).toMatch(/lost its hold.*outcome is unknown/);
    expect(sent.map((m) => m.kind === 'outcome' && m.outcome)).toEqual([outcome]);
    expect(JSON.parse(recorded as string)).toEqual(outcome);
  });

  it('returns a fenced concurrent call worker_lost without reporting it (its job runs again elsewhere)', async () => {
    const { outcome, sent, recorded } = await fencedRun('concurrent');
    expect(outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
    expect(sent).toEqual([]);
    expect(recorded).toMatch(/^running /);
  });
});
