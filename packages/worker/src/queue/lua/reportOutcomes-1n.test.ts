import { OUTCOME_TTL_MS, RUNNING_MARK, redisKeys, runScript } from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../../test/support/redis.js';
import { useRedis } from '../../../../../test/support/use-redis.js';
import { reportOutcomesScript } from './reportOutcomes-1n.lua.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const MARK = `${RUNNING_MARK}job-1`;

/** A coordinator's namespace on a fresh prefix: its results stream and outcome keys. */
function namespace() {
  const keys = redisKeys(randomPrefix());
  return { stream: keys.results('c-1'), outcome: (callId: string) => keys.outcome('c-1', callId) };
}

interface Call {
  callId: string;
  json: string;
}

function report(
  ns: ReturnType<typeof namespace>,
  { fresh = [], resent = [], streamTtlMs = 0 }: { fresh?: Call[]; resent?: Call[]; streamTtlMs?: number },
): Promise<unknown> {
  const keys = [ns.stream, ...fresh.map((c) => ns.outcome(c.callId))];
  const args = [MARK, OUTCOME_TTL_MS, 1000, streamTtlMs, ...[...fresh, ...resent].flatMap((c) => [c.callId, c.json])];
  return runScript(redis, reportOutcomesScript, keys, args);
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
        { callId: 'a', json: '{"n":1}' },
        { callId: 'b', json: '{"n":2}' },
      ],
    });
    expect(reply).toEqual([1, 1]);
    expect(await redis.get(ns.outcome('a'))).toBe('{"n":1}');
    expect(await redis.xlen(ns.stream)).toBe(1);
    expect(await sent(ns.stream)).toEqual([
      ['a', '{"n":1}'],
      ['b', '{"n":2}'],
    ]);
  });

  it("replaces the job's own running mark", async () => {
    const ns = namespace();
    await redis.set(ns.outcome('a'), MARK);
    expect(await report(ns, { fresh: [{ callId: 'a', json: '{"n":1}' }] })).toEqual([1]);
    expect(await redis.get(ns.outcome('a'))).toBe('{"n":1}');
  });

  it('keeps an outcome recorded before and does not send the late one', async () => {
    const ns = namespace();
    await redis.set(ns.outcome('a'), '{"lost":true}');
    const reply = await report(ns, {
      fresh: [
        { callId: 'a', json: '{"n":1}' },
        { callId: 'b', json: '{"n":2}' },
      ],
    });
    expect(reply).toEqual([0, 1]);
    expect(await redis.get(ns.outcome('a'))).toBe('{"lost":true}');
    expect(await sent(ns.stream)).toEqual([['b', '{"n":2}']]);
  });

  it('leaves a call another job is running alone and sends nothing for it', async () => {
    const ns = namespace();
    await redis.set(ns.outcome('a'), `${RUNNING_MARK}job-2`);
    expect(await report(ns, { fresh: [{ callId: 'a', json: '{"n":1}' }] })).toEqual([0]);
    expect(await redis.get(ns.outcome('a'))).toBe(`${RUNNING_MARK}job-2`);
    expect(await redis.exists(ns.stream)).toBe(0);
  });

  it('sends outcomes recorded before again without writing their keys', async () => {
    const ns = namespace();
    const reply = await report(ns, {
      fresh: [{ callId: 'a', json: '{"n":1}' }],
      resent: [{ callId: 'b', json: '{"n":2}' }],
    });
    expect(reply).toEqual([1]);
    expect(await redis.exists(ns.outcome('b'))).toBe(0);
    expect(await sent(ns.stream)).toEqual([
      ['a', '{"n":1}'],
      ['b', '{"n":2}'],
    ]);
  });

  it("pushes the stream's TTL back only when asked", async () => {
    const ns = namespace();
    await report(ns, { fresh: [{ callId: 'a', json: '{}' }] });
    expect(await redis.pttl(ns.stream)).toBe(-1);
    await report(ns, { fresh: [{ callId: 'b', json: '{}' }], streamTtlMs: 60_000 });
    expect(await redis.pttl(ns.stream)).toBeGreaterThan(50_000);
  });

  it('gives recorded outcomes the outcome TTL', async () => {
    const ns = namespace();
    await report(ns, { fresh: [{ callId: 'a', json: '{}' }] });
    expect(await redis.pttl(ns.outcome('a'))).toBeGreaterThan(OUTCOME_TTL_MS - 60_000);
  });
});
