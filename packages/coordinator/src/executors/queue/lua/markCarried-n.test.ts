import { OUTCOME_TTL_MS, RUNNING_MARK, redisKeys } from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../../../test/support/redis.js';
import { useRedis } from '../../../../../../test/support/use-redis.js';
import { runScript } from '../../../support/redis-client.js';
import { markCarriedScript, parseMarkCarriedReply } from './markCarried-n.lua.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const MARK = `${RUNNING_MARK}job-1`;

/** markCarried over `rounds` (round → its call indexes) in coordinator c-1's namespace. */
async function mark(prefix: string, rounds: Record<string, number[]>): Promise<number> {
  const keys = redisKeys(prefix);
  const hashes = Object.keys(rounds).map((r) => keys.outcomes('c-1', r));
  const args = [MARK, OUTCOME_TTL_MS, ...Object.values(rounds).map((f) => f.join(','))];
  return parseMarkCarriedReply(await runScript(redis, markCarriedScript, hashes, args));
}

describe('markCarried', () => {
  it("marks each call's field in its round's hash, and gives a new hash the outcome TTL", async () => {
    const prefix = randomPrefix();
    const keys = redisKeys(prefix);
    expect(await mark(prefix, { r1: [0, 1, 2], r2: [0] })).toBe(4);
    expect(await redis.hgetall(keys.outcomes('c-1', 'r1'))).toEqual({ '0': MARK, '1': MARK, '2': MARK });
    expect(await redis.hgetall(keys.outcomes('c-1', 'r2'))).toEqual({ '0': MARK });
    expect(await redis.pttl(keys.outcomes('c-1', 'r1'))).toBeGreaterThan(OUTCOME_TTL_MS - 60_000);
  });

  it('leaves a recorded outcome and another job’s mark as they are', async () => {
    const prefix = randomPrefix();
    const hash = redisKeys(prefix).outcomes('c-1', 'r1');
    await redis.hset(hash, '0', '{"status":"ok"}', '1', `${RUNNING_MARK}job-2`);
    expect(await mark(prefix, { r1: [0, 1, 2] })).toBe(1);
    expect(await redis.hgetall(hash)).toEqual({ '0': '{"status":"ok"}', '1': `${RUNNING_MARK}job-2`, '2': MARK });
  });

  it('writes nothing, and sets no TTL, when every field holds something', async () => {
    const prefix = randomPrefix();
    const hash = redisKeys(prefix).outcomes('c-1', 'r1');
    await redis.hset(hash, '0', '{}');
    expect(await mark(prefix, { r1: [0] })).toBe(0);
    expect(await redis.pttl(hash)).toBe(-1);
  });
});
