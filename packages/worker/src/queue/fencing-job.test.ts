import { type ExecOutcome, SETTLE_GRACE_MS } from '@tool-dispatch/shared';
import {
  callIdFor,
  parseResultsEntry,
  type QueuedJob,
  type RedisClient,
  type RedisKeys,
  readOutcomes,
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

function contextOf(keys: RedisKeys, stopped: string[], events: string[]) {
  const registry = new HandlerRegistry();
  // Ignores its stop for longer than the settle grace, as a handler winding down slowly may.
  registry.register('linger', (_args, ctx) => {
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        stopped.push(String((ctx.signal.reason as Error).name));
        events.push('stopped');
        setTimeout(() => {
          events.push('ended');
          reject(ctx.signal.reason);
        }, SETTLE_GRACE_MS + 500);
      }),
    );
  });
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
    reportFor: (queued: QueuedJob, carrierId: string) => {
      const report = reporter.forJob(queued, carrierId);
      return async (...args: Parameters<typeof report>) => {
        await report(...args);
        events.push('reported');
      };
    },
    runCall: (call: Parameters<typeof runQueuedCall>[1], _q: QueuedJob, carrier: Parameters<typeof runQueuedCall>[2]) =>
      runQueuedCall(callContext, call, carrier, async () => ({ error: 'no questions here' })),
  };
}

async function fencedRun(queue: 'serial' | 'concurrent', handler = 'wait') {
  const keys = redisKeys(randomPrefix());
  const base = queuedJobOf(keys, handler, [{}]);
  const queued: QueuedJob = { ...base, calls: base.calls.map((c) => ({ ...c, queue })) };
  const id = callIdFor(queued.calls[0]?.round as string, 0);
  const stopped: string[] = [];
  const events: string[] = [];
  const fence = new AbortController();
  setTimeout(() => fence.abort(new FencedAbort('the worker lost its hold on job j-1: no renewal', 2_600)), 100);
  const carrier = { id: 'j-1', addedAtMs: Date.now(), queueName: 'q' };
  const outcomes = await runQueuedJob(contextOf(keys, stopped, events), queued, carrier, fence.signal, true);
  const sent = (await redis.xrange(queued.replyTo, '-', '+')).flatMap(([, f]) => parseResultsEntry(f));
  const [recorded] = await readOutcomes(redis, keys, 'c-1', [id]);
  return { outcome: outcomes[id] as ExecOutcome, stopped, sent, recorded, events };
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

  it('reports a fenced concurrent call worker_lost too, so a call whose job nobody runs again is answered', async () => {
    const { outcome, sent, recorded } = await fencedRun('concurrent');
    expect(outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
    expect(sent.map((m) => m.kind === 'outcome' && m.outcome)).toEqual([outcome]);
    expect(JSON.parse(recorded as string)).toEqual(outcome);
  });

  it('waits for a fenced call’s handler to end, past the settle grace, before its outcome and report', async () => {
    const { outcome, stopped, sent, events } = await fencedRun('serial', 'linger');
    expect(stopped).toEqual(['FencedAbort']);
    expect(outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
    expect(sent).toHaveLength(1);
    // The handler ignored the stop for longer than SETTLE_GRACE_MS; nothing was reported before it ended.
    expect(events).toEqual(['stopped', 'ended', 'reported']);
  });
});
