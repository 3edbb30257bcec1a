import {
  groupSlots,
  OUTCOME_TTL_MS,
  outcomeSlot,
  RUNNING_MARK,
  redisKeys,
  runScript,
} from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { outcomeAt } from '../../../../../test/support/outcomes.js';
import { randomPrefix } from '../../../../../test/support/redis.js';
import { useRedis } from '../../../../../test/support/use-redis.js';
import { reportOutcomesScript } from './reportOutcomes-1n.lua.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const MARK = `${RUNNING_MARK}job-1`;

/** A coordinator's namespace on a fresh prefix: its results stream and its calls' outcome slots. */
function namespace() {
  const keys = redisKeys(randomPrefix());
  return { keys, stream: keys.results('c-1'), outcome: (callId: string) => outcomeAt(redis, keys, 'c-1', callId) };
}

interface Call {
  callId: string;
  json: string;
}

function report(
  ns: ReturnType<typeof namespace>,
  { fresh = [], resent = [], streamTtlMs = 0 }: { fresh?: Call[]; resent?: Call[]; streamTtlMs?: number },
): Promise<unknown> {
  const slots = fresh.map((c) => outcomeSlot(ns.keys, 'c-1', c.callId));
  const { keys: hashes, at } = groupSlots(slots);
  const args: (string | number)[] = [MARK, OUTCOME_TTL_MS, 1000, streamTtlMs, fresh.length];
  fresh.forEach((c, j) => {
    args.push(at[j] as number, slots[j]?.field as string, c.callId, c.json);
  });
  for (const c of resent) args.push(c.callId, c.json);
  return runScript(redis, reportOutcomesScript, [ns.stream, ...hashes], args);
}

/** Every `job` → `outcome` pair sent to the stream, in order. */
async function sent(stream: string): Promise<string[][]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.flatMap(([, fields]) => {
    const pairs: string[][] = [];
    for (let i = 0; i + 3 < fields.length; i += 4) pairs.push([fields[i + 1] as string, fields[i + 3] as string]);
    return pairs;
  });
}

describe('reportOutcomes', () => {
  it('records fresh outcomes and sends them as one stream entry', async () => {
    const ns = namespace();
    const reply = await report(ns, {
      fresh: [
        { callId: 'r1-0', json: '{"n":1}' },
        { callId: 'r1-1', json: '{"n":2}' },
      ],
    });
    expect(reply).toEqual([1, 1]);
    expect(await ns.outcome('r1-0').get()).toBe('{"n":1}');
    expect(await redis.xlen(ns.stream)).toBe(1);
    expect(await sent(ns.stream)).toEqual([
      ['r1-0', '{"n":1}'],
      ['r1-1', '{"n":2}'],
    ]);
  });

  it("replaces the job's own running mark", async () => {
    const ns = namespace();
    await ns.outcome('r1-0').set(MARK);
    expect(await report(ns, { fresh: [{ callId: 'r1-0', json: '{"n":1}' }] })).toEqual([1]);
    expect(await ns.outcome('r1-0').get()).toBe('{"n":1}');
  });

  it('keeps an outcome recorded before and does not send the late one', async () => {
    const ns = namespace();
    await ns.outcome('r1-0').set('{"lost":true}');
    const reply = await report(ns, {
      fresh: [
        { callId: 'r1-0', json: '{"n":1}' },
        { callId: 'r1-1', json: '{"n":2}' },
      ],
    });
    expect(reply).toEqual([0, 1]);
    expect(await ns.outcome('r1-0').get()).toBe('{"lost":true}');
    expect(await sent(ns.stream)).toEqual([['r1-1', '{"n":2}']]);
  });

  it('leaves a call another job is running alone and sends nothing for it', async () => {
    const ns = namespace();
    await ns.outcome('r1-0').set(`${RUNNING_MARK}job-2`);
    expect(await report(ns, { fresh: [{ callId: 'r1-0', json: '{"n":1}' }] })).toEqual([0]);
    expect(await ns.outcome('r1-0').get()).toBe(`${RUNNING_MARK}job-2`);
    expect(await redis.exists(ns.stream)).toBe(0);
  });

  it('sends outcomes recorded before again without writing their keys', async () => {
    const ns = namespace();
    const reply = await report(ns, {
      fresh: [{ callId: 'r1-0', json: '{"n":1}' }],
      resent: [{ callId: 'r1-1', json: '{"n":2}' }],
    });
    expect(reply).toEqual([1]);
    expect(await ns.outcome('r1-1').get()).toBeNull();
    expect(await sent(ns.stream)).toEqual([
      ['r1-0', '{"n":1}'],
      ['r1-1', '{"n":2}'],
    ]);
  });

  it("pushes the stream's TTL back only when asked", async () => {
    const ns = namespace();
    await report(ns, { fresh: [{ callId: 'r1-0', json: '{}' }] });
    expect(await redis.pttl(ns.stream)).toBe(-1);
    await report(ns, { fresh: [{ callId: 'r1-1', json: '{}' }], streamTtlMs: 60_000 });
    expect(await redis.pttl(ns.stream)).toBeGreaterThan(50_000);
  });

  it('gives recorded outcomes the outcome TTL', async () => {
    const ns = namespace();
    await report(ns, { fresh: [{ callId: 'r1-0', json: '{}' }] });
    expect(await ns.outcome('r1-0').ttl()).toBeGreaterThan(OUTCOME_TTL_MS - 60_000);
  });

  it("records the calls of several rounds, each in its round's hash, as one stream entry", async () => {
    const ns = namespace();
    const reply = await report(ns, {
      fresh: [
        { callId: 'r1-0', json: '{"n":1}' },
        { callId: 'r2-0', json: '{"n":2}' },
        { callId: 'r1-1', json: '{"n":3}' },
      ],
    });
    expect(reply).toEqual([1, 1, 1]);
    expect(await redis.hgetall(ns.outcome('r1-0').key)).toEqual({ '0': '{"n":1}', '1': '{"n":3}' });
    expect(await redis.hgetall(ns.outcome('r2-0').key)).toEqual({ '0': '{"n":2}' });
    expect(await sent(ns.stream)).toEqual([
      ['r1-0', '{"n":1}'],
      ['r2-0', '{"n":2}'],
      ['r1-1', '{"n":3}'],
    ]);
  });

  it('takes only the first of two outcomes of one call in one report', async () => {
    const ns = namespace();
    const reply = await report(ns, {
      fresh: [
        { callId: 'r1-0', json: '{"n":1}' },
        { callId: 'r1-0', json: '{"n":2}' },
      ],
    });
    expect(reply).toEqual([1, 0]);
    expect(await ns.outcome('r1-0').get()).toBe('{"n":1}');
    expect(await sent(ns.stream)).toEqual([['r1-0', '{"n":1}']]);
  });

  it("leaves a marked hash's TTL as it is (a committed round's, cut short, is not lengthened)", async () => {
    const ns = namespace();
    const slot = ns.outcome('r1-0');
    await slot.set(MARK);
    await redis.pexpire(slot.key, 60_000);
    await report(ns, { fresh: [{ callId: 'r1-0', json: '{}' }] });
    expect(await slot.get()).toBe('{}');
    expect(await slot.ttl()).toBeLessThanOrEqual(60_000);
  });
});
