import type { ExecOutcome } from '@tool-dispatch/shared';
import {
  callIdFor,
  parseResultsEntry,
  type RedisClient,
  RUNNING_MARK,
  redisKeys,
  STALLED_REASON,
} from '@tool-dispatch/shared/redis';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { outcomeAt } from '../../../../test/support/outcomes.js';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { queuedJobOf } from '../../testing/queued-job.js';
import { Reporter } from './reporter.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const ok = (output: unknown): ExecOutcome => ({ status: 'ok', output, durationMs: 1, ranOn: 'w-1' });

/** A fresh prefix: the reporter over it, and the job of coordinator c-1 whose results stream it writes. */
function setUp(calls = 2) {
  const keys = redisKeys(randomPrefix());
  const reporter = new Reporter({ redis: redis as unknown as RedisClient, keys });
  const queued = queuedJobOf(
    keys,
    'calculate',
    Array.from({ length: calls }, () => ({})),
  );
  const round = queued.calls[0]?.round ?? '';
  const ref = (i: number) => ({ callId: callIdFor(round, i), origin: 'c-1' });
  return { keys, reporter, queued, ref, round };
}

/** Every entry of the stream, read back by the shared parser. */
async function entries(stream: string) {
  const raw = await redis.xrange(stream, '-', '+');
  return raw.map(([, fields]) => parseResultsEntry(fields));
}

/** EVALSHA and EVAL calls Redis has served since the last CONFIG RESETSTAT. */
async function scriptCalls(): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

describe('Reporter', () => {
  it('records and sends the outcomes of one tick in one script, as one results entry', async () => {
    const { reporter, queued, ref, keys } = setUp(3);
    // The script is loaded once beforehand, so the count below is of this report alone.
    await reporter.forJob({ ...queued, calls: [] }, 'warm')({ callId: 'warm-0', origin: 'c-1' }, ok(0));
    await redis.config('RESETSTAT');
    const report = reporter.forJob(queued, 'job-1');
    await Promise.all([report(ref(0), ok(0)), report(ref(1), ok(1)), report(ref(2), ok(2))]);
    expect(await scriptCalls()).toBe(1);
    const sent = (await entries(queued.replyTo)).filter((e) => e[0]?.callId !== 'warm-0');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.map((m) => m.kind === 'outcome' && [m.callId, m.outcome])).toEqual([
      [ref(0).callId, ok(0)],
      [ref(1).callId, ok(1)],
      [ref(2).callId, ok(2)],
    ]);
    for (const i of [0, 1, 2]) {
      expect(JSON.parse((await outcomeAt(redis, keys, 'c-1', ref(i).callId).get()) as string)).toEqual(ok(i));
    }
  });

  it('sends a recorded outcome again without recording it twice, and never sends a second outcome of one call', async () => {
    const { reporter, queued, ref, keys } = setUp(1);
    const slot = outcomeAt(redis, keys, 'c-1', ref(0).callId);
    await reporter.forJob(queued, 'job-1')(ref(0), ok('first'));
    // Another attempt runs the call again: its fresh outcome does not replace the recorded one, nor go out.
    await reporter.forJob(queued, 'job-2')(ref(0), ok('second'));
    expect(JSON.parse((await slot.get()) as string)).toEqual(ok('first'));
    // The recorded outcome, found at a later start, is sent again (a lost report made good), the key left as it is.
    const ttlBefore = await slot.ttl();
    await reporter.forJob(queued, 'job-3')(ref(0), ok('first'), { recorded: true });
    expect(JSON.parse((await slot.get()) as string)).toEqual(ok('first'));
    expect(await slot.ttl()).toBeLessThanOrEqual(ttlBefore);
    const sent = (await entries(queued.replyTo)).flat().map((m) => m.kind === 'outcome' && m.outcome);
    expect(sent).toEqual([ok('first'), ok('first')]);
  });

  it('records in another namespace first, then sends, for a call whose outcome key is not beside the stream', async () => {
    const { reporter, queued, keys, round } = setUp(1);
    const taken = { callId: callIdFor(round, 0), origin: 'c-0' };
    await reporter.forJob(queued, 'job-1')(taken, ok('a'));
    await reporter.forJob(queued, 'job-2')(taken, ok('b'));
    expect(JSON.parse((await outcomeAt(redis, keys, 'c-0', taken.callId).get()) as string)).toEqual(ok('a'));
    expect(await outcomeAt(redis, keys, 'c-1', taken.callId).get()).toBeNull();
    const sent = (await entries(queued.replyTo)).flat().map((m) => m.kind === 'outcome' && m.outcome);
    expect(sent).toEqual([ok('a')]);
  });

  it("marks a job's calls running, and finds one cancelled or recorded before", async () => {
    const { reporter, ref, keys } = setUp(3);
    await redis.set(keys.cancel('c-1', ref(1).callId), '1');
    await outcomeAt(redis, keys, 'c-1', ref(2).callId).set(JSON.stringify(ok('before')));
    const starts = await reporter.start([ref(0), ref(1), ref(2)], 'job-1', 'serial');
    expect(starts[0]).toBe('run');
    expect(starts[1]).toBe('cancelled');
    expect(starts[2]).toEqual({ recorded: JSON.stringify(ok('before')) });
    expect(await outcomeAt(redis, keys, 'c-1', ref(0).callId).get()).toBe(`${RUNNING_MARK}job-1`);
  });

  it('reads an outcome or mark an older worker left in its key of before v1.3 (one key a call), and never writes it', async () => {
    const { reporter, ref, keys } = setUp(3);
    await redis.set(keys.legacyOutcome('c-1', ref(0).callId), JSON.stringify(ok('old')));
    await redis.set(keys.legacyOutcome('c-1', ref(1).callId), `${RUNNING_MARK}job-old`);
    const starts = await reporter.start([ref(0), ref(1), ref(2)], 'job-1', 'serial');
    expect(starts).toEqual([{ recorded: JSON.stringify(ok('old')) }, 'elsewhere', 'run']);
    expect(await outcomeAt(redis, keys, 'c-1', ref(0).callId).get()).toBeNull();
    expect(await outcomeAt(redis, keys, 'c-1', ref(2).callId).get()).toBe(`${RUNNING_MARK}job-1`);
    expect(await redis.exists(keys.legacyOutcome('c-1', ref(2).callId))).toBe(0);
  });

  describe("a concurrent call holding another job's running mark", () => {
    /** A job hash as BullMQ keeps it (`<prefix>:<queue>:<id>`): the job exists. */
    const jobExists = (keys: ReturnType<typeof redisKeys>, queueName: string, id: string) =>
      redis.hset(`${keys.prefix}:${queueName}:${id}`, 'name', 'calculate');

    it('is taken over and run when that job does not exist (its add failed after the mark went through)', async () => {
      const { reporter, ref, keys } = setUp(2);
      await outcomeAt(redis, keys, 'c-1', ref(0).callId).set(`${RUNNING_MARK}job-never-added`);
      await outcomeAt(redis, keys, 'c-1', ref(1).callId).set(`${RUNNING_MARK}job-there`);
      await jobExists(keys, '{concurrent}', 'job-there');
      const starts = await reporter.start([ref(0), ref(1)], 'job-2', 'concurrent', '{concurrent}');
      expect(starts).toEqual(['run', 'elsewhere']);
      expect(await outcomeAt(redis, keys, 'c-1', ref(0).callId).get()).toBe(`${RUNNING_MARK}job-2`);
      expect(await outcomeAt(redis, keys, 'c-1', ref(1).callId).get()).toBe(`${RUNNING_MARK}job-there`);
    });

    it('is left to that job without the queue to look in, and always for a serial call', async () => {
      const { reporter, ref, keys } = setUp(1);
      await outcomeAt(redis, keys, 'c-1', ref(0).callId).set(`${RUNNING_MARK}job-never-added`);
      expect(await reporter.start([ref(0)], 'job-2', 'concurrent')).toEqual(['elsewhere']);
      expect(await reporter.start([ref(0)], 'job-2', 'serial', '{serial}')).toEqual(['elsewhere']);
      expect(await outcomeAt(redis, keys, 'c-1', ref(0).callId).get()).toBe(`${RUNNING_MARK}job-never-added`);
    });
  });

  it('never runs a serial call again that the same job started before (its outcome lost): worker_lost; a concurrent one runs', async () => {
    const { reporter, ref } = setUp(1);
    expect(await reporter.start([ref(0)], 'job-1', 'serial')).toEqual(['run']);
    const again = await reporter.start([ref(0)], 'job-1', 'serial');
    expect(again[0]).toMatchObject({ ends: { status: 'error', code: 'worker_lost' } });
    expect((again[0] as { ends: { message: string } }).ends.message).toMatch(/started before .* not run again/);
    expect(await reporter.start([ref(0)], 'job-1', 'concurrent')).toEqual(['run']);
  });

  it("reports a failed job's calls with the verdict the coordinator gives (failedJobVerdict)", async () => {
    const { reporter, queued, ref } = setUp(2);
    const bullJob = { id: 'job-1', data: queued, processedOn: Date.now(), finishedOn: Date.now() } as unknown as Job;
    await reporter.reportFailure(bullJob, new Error(STALLED_REASON));
    const sent = (await entries(queued.replyTo)).flat();
    expect(sent.map((m) => m.callId)).toEqual([ref(0).callId, ref(1).callId]);
    for (const m of sent) {
      expect(m.kind === 'outcome' && m.outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
      expect(m.kind === 'outcome' && m.outcome.status === 'error' && m.outcome.message).toMatch(
        /^calculate: its worker died; the outcome is unknown and it was retried at most once$/,
      );
    }
  });

  it('reports nothing for a failure BullMQ retries (no finishedOn): the next start answers the calls', async () => {
    const { reporter, queued } = setUp(2);
    const bullJob = { id: 'job-1', data: queued, processedOn: Date.now() } as unknown as Job;
    await reporter.reportFailure(bullJob, new Error('Command timed out'));
    expect(await entries(queued.replyTo)).toEqual([]);
  });
});
