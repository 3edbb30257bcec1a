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
import { claimCallsScript, parseClaimCallsReply } from './claimCalls-n.lua.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const STALE = `${RUNNING_MARK}job-gone`;
const MINE = `${RUNNING_MARK}job-2`;

describe('claimCalls', () => {
  it('takes a field that still holds the stale mark, and leaves one that holds anything else', async () => {
    const keys = redisKeys(randomPrefix());
    const ids = ['rnd_a-0', 'rnd_a-1', 'rnd_a-2', 'rnd_b-0'];
    const at = (id: string) => outcomeAt(redis, keys, 'c-1', id);
    await at('rnd_a-0').set(STALE);
    await at('rnd_a-1').set('{"status":"ok","output":1,"durationMs":1}');
    await at('rnd_a-2').set(`${RUNNING_MARK}job-other`);
    await at('rnd_b-0').set(STALE);
    const slots = ids.map((id) => outcomeSlot(keys, 'c-1', id));
    const { keys: hashes, at: index } = groupSlots(slots);
    const args: (string | number)[] = [MINE, OUTCOME_TTL_MS];
    slots.forEach((s, k) => {
      args.push(index[k] as number, s.field, STALE);
    });
    expect(parseClaimCallsReply(await runScript(redis, claimCallsScript, hashes, args))).toEqual([
      true,
      false,
      false,
      true,
    ]);
    expect(await at('rnd_a-0').get()).toBe(MINE);
    expect(await at('rnd_a-1').get()).toMatch(/"ok"/);
    expect(await at('rnd_a-2').get()).toBe(`${RUNNING_MARK}job-other`);
    expect(await at('rnd_b-0').get()).toBe(MINE);
    expect(await at('rnd_b-0').ttl()).toBeGreaterThan(0);
  });

  it.each([
    ['nil', null],
    ['a bare number', 1],
    ['a list with a string', [1, 'x']],
  ])('a reply of %s is named as the script', (_what, reply) => {
    expect(() => parseClaimCallsReply(reply)).toThrow(/^claimCalls script: expected a list of 1 or 0/);
  });
});
