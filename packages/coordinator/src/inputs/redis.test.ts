import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import type { ParkedInput } from '../model.js';
import { describeInputHubContract } from './input-hub.contract.js';
import { RedisInputHub } from './redis.js';

let url = '';
let redis: Redis;
useRedis((server, r) => {
  url = server.url;
  redis = r;
});

/** A hub on its own connection, as on a separate coordinator. */
function hubOn(prefix: string, pollIntervalMs = 60_000): { hub: RedisInputHub; close(): Promise<void> } {
  const connection = new Redis(url);
  const hub = new RedisInputHub({ redis: connection, prefix, pollIntervalMs });
  return {
    hub,
    close: async () => {
      await hub.close();
      connection.disconnect();
    },
  };
}

describeInputHubContract('RedisInputHub', async () => {
  const prefix = randomPrefix();
  const a = hubOn(prefix);
  const b = hubOn(prefix);
  return {
    hub: a.hub,
    peer: b.hub,
    cleanup: async () => {
      await Promise.all([a.close(), b.close()]);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    },
  };
});

describe('RedisInputHub on Redis', () => {
  const parked = (prefix: string): ParkedInput => ({
    inputId: 'in_rnd_1_0',
    kind: 'client',
    session: 's1',
    round: 'rnd_1',
    run: 'r1',
    callId: 'c1',
    callIndex: 0,
    name: 'client_lookup',
    args: { q: prefix },
    createdAt: Date.now(),
    deadline: Date.now() + 10_000,
  });

  it('keeps every parked call under the session’s hash tag, with a TTL past its deadline', async () => {
    const prefix = randomPrefix();
    const a = hubOn(prefix);
    const i = parked(prefix);
    await a.hub.park(i);
    await a.hub.answer('s1', i.inputId, { output: 1 });
    for (const key of [`${prefix}:{s:s1}:input:pending`, `${prefix}:{s:s1}:input:settled`]) {
      const ttl = await redis.pttl(key);
      if (key.endsWith('pending')) expect(await redis.exists(key)).toBe(0);
      else expect(ttl).toBeGreaterThan(10_000);
    }
    await a.hub.park({ ...i, inputId: 'in_rnd_1_1', callIndex: 1 });
    expect(await redis.pttl(`${prefix}:{s:s1}:input:pending`)).toBeGreaterThan(10_000);
    await a.close();
  });

  it('finds an answer whose message it missed by reading the settled hash', async () => {
    const prefix = randomPrefix();
    const a = hubOn(prefix, 50);
    const i = parked(prefix);
    await a.hub.park(i);
    const waited = a.hub.wait(i, { signal: new AbortController().signal });
    await new Promise((r) => setTimeout(r, 20));
    // A settlement recorded without a pub/sub message (as if the message were lost).
    await redis.hdel(`${prefix}:{s:s1}:input:pending`, i.inputId);
    await redis.hset(
      `${prefix}:{s:s1}:input:settled`,
      i.inputId,
      JSON.stringify({ by: 'answer', answer: { output: 'polled' } }),
    );
    expect(await waited).toEqual({ by: 'answer', answer: { output: 'polled' } });
    await a.close();
  });
});
