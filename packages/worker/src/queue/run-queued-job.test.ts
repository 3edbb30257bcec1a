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
import { outcomeAt } from '../../../../test/support/outcomes.js';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { queuedJobOf } from '../../testing/queued-job.js';
import { HandlerRegistry } from '../registry.js';
import { Slots } from '../support/slots.js';
import { Reporter } from './reporter.js';
import { runQueuedCall } from './run-call.js';
import { runQueuedJob, type TakenCarrier } from './run-queued-job.js';
import { RunningCalls } from './running-calls.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

/** A registry whose `note` handler records each call it runs, after `ms` (args.ms). */
function recordingRegistry() {
  const ran: string[] = [];
  const finished: string[] = [];
  const registry = new HandlerRegistry();
  registry.register('note', async (args, ctx) => {
    ran.push(ctx.toolCallId);
    await new Promise((r) => setTimeout(r, Number(args.ms ?? 0)));
    finished.push(ctx.toolCallId);
    return { noted: ctx.toolCallId };
  });
  return { registry, ran, finished };
}

/** A job of `ms.length` calls of `note` (call i sleeping ms[i]) for coordinator c-1 on a fresh prefix. */
const jobOf = (keys: RedisKeys, ms: number[]): QueuedJob =>
  queuedJobOf(
    keys,
    'note',
    ms.map((m) => ({ ms: m })),
  );

/** The real parts runQueuedJob is composed with in start-worker: reporter, slots, handlers. */
function contextOf(keys: RedisKeys, registry: HandlerRegistry) {
  const reporter = new Reporter({ redis: redis as unknown as RedisClient, keys });
  const slots = { concurrent: new Slots(4), serial: new Slots(1) };
  const callContext = {
    id: 'w-test',
    registry,
    config: { httpAllow: [], searchUrl: undefined },
    slots,
    metrics: undefined,
  };
  return {
    id: 'w-test',
    running: new RunningCalls(),
    start: reporter.start.bind(reporter),
    reportFor: reporter.forJob.bind(reporter),
    runCall: (call: Parameters<typeof runQueuedCall>[1], _queued: QueuedJob, carrier: TakenCarrier) =>
      runQueuedCall(callContext, call, carrier, async () => ({ error: 'no questions here' })),
  };
}

const carrier = (id: string): TakenCarrier => ({ id, addedAtMs: Date.now(), queueName: 'q' });

describe('runQueuedJob', () => {
  it('runs every call to its end when a sibling report fails, then fails the job with that error', async () => {
    const keys = redisKeys(randomPrefix());
    const { registry, finished } = recordingRegistry();
    const queued = jobOf(keys, [0, 300]);
    // The results stream is a plain string: every report to it fails (WRONGTYPE).
    await redis.set(queued.replyTo, 'not a stream');
    const ids = queued.calls.map((c) => callIdFor(c.round, c.callIndex));
    const run = runQueuedJob(contextOf(keys, registry), queued, carrier('job-1'), new AbortController().signal, true);
    await expect(run).rejects.toThrow(/WRONGTYPE/);
    // The slow call finished although the fast one's report had already failed.
    expect(finished).toEqual(['call_0', 'call_1']);
    expect(JSON.parse((await outcomeAt(redis, keys, 'c-1', ids[0] as string).get()) as string)).toMatchObject({
      status: 'ok',
    });
  });

  it('answers a call found cancelled at its start as cancelled without running it, and runs its sibling', async () => {
    const keys = redisKeys(randomPrefix());
    const { registry, ran } = recordingRegistry();
    const queued = jobOf(keys, [0, 0]);
    const ids = queued.calls.map((c) => callIdFor(c.round, c.callIndex)) as [string, string];
    await redis.set(keys.cancel('c-1', ids[0]), '1');
    const outcomes = await runQueuedJob(
      contextOf(keys, registry),
      queued,
      carrier('job-1'),
      new AbortController().signal,
      true,
    );
    expect(ran).toEqual(['call_1']);
    expect(outcomes[ids[0]]).toMatchObject({ status: 'error', code: 'cancelled', ranOn: 'w-test' });
    expect(outcomes[ids[1]]).toMatchObject({ status: 'ok', output: { noted: 'call_1' } });
    const sent = (await redis.xrange(queued.replyTo, '-', '+')).flatMap(([, f]) => parseResultsEntry(f));
    expect(sent.map((m) => [m.callId, m.kind === 'outcome' && (m.outcome as ExecOutcome).status])).toEqual([
      [ids[0], 'error'],
      [ids[1], 'ok'],
    ]);
  });

  it('sends a call recorded before (an earlier attempt) again without running it', async () => {
    const keys = redisKeys(randomPrefix());
    const { registry, ran } = recordingRegistry();
    const queued = jobOf(keys, [0]);
    const id = callIdFor(queued.calls[0]?.round as string, 0);
    const before: ExecOutcome = { status: 'ok', output: 'before', durationMs: 1, ranOn: 'w-0' };
    await outcomeAt(redis, keys, 'c-1', id).set(JSON.stringify(before));
    const outcomes = await runQueuedJob(
      contextOf(keys, registry),
      queued,
      carrier('job-2'),
      new AbortController().signal,
      true,
    );
    expect(ran).toEqual([]);
    expect(outcomes[id]).toEqual(before);
    const sent = (await redis.xrange(queued.replyTo, '-', '+')).flatMap(([, f]) => parseResultsEntry(f));
    expect(sent.map((m) => m.kind === 'outcome' && m.outcome)).toEqual([before]);
  });
});
