import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../../../../test/support/redis.js';
import { RedisStore } from './redis.js';
import { describeStoreContract } from './store.contract.js';

let server: TestRedis;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

async function deleteKeys(prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
}

describeStoreContract('RedisStore', async () => {
  const prefix = randomPrefix();
  return { store: new RedisStore({ redis, prefix }), cleanup: () => deleteKeys(prefix) };
});

describe('RedisStore on Redis', () => {
  it('puts a TTL on every key it writes', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix, sessionTtlMs: 60_000 });
    await store.putSession({
      id: 's1',
      provider: 'openai',
      tenant: 't1',
      autoApprove: [],
      clientTools: [],
      loaded: [],
      fetched: [],
      workspace: '/w',
      createdAt: 1,
      updatedAt: 1,
    });
    await store.markFetched('s1', ['a']);
    await store.putDedupe('s1', 'r1', {
      key: 'k',
      tool: 'read_files',
      callId: 'c',
      round: 'rnd',
      output: 1,
      paths: ['a'],
    });
    await store.putCached('t1', 'k', { output: 1, callId: 'c', round: 'rnd', storedAt: 1 }, 30 * 60_000);
    await store.recordResult('s1', 0, {
      id: 'c',
      name: 'calculate',
      status: 'ok',
      durationMs: 1,
      round: 'rnd',
      run: 'r1',
      at: 'x',
    });
    await store.commitResults({
      session: 's1',
      tenant: 't1',
      run: 'r2',
      items: [
        {
          callIndex: 0,
          entry: { id: 'c', name: 'fetch_page', status: 'ok', durationMs: 1, round: 'rnd2', run: 'r2', at: 'x' },
          dedupe: { key: 'k2', tool: 'fetch_page', callId: 'c', round: 'rnd2', output: 1 },
          cache: { key: 'k2', value: { output: 1, callId: 'c', round: 'rnd2', storedAt: 1 }, ttlMs: 60_000 },
        },
      ],
    });
    await store.beginRound({ session: 's1', run: 'r1', round: 'rnd', idempotencyKey: 'key', callsHash: 'h' });
    await store.finishRound('s1', 'r1', 'rnd', { round: 'rnd', results: [] });
    const keys = await redis.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThanOrEqual(13);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect({ key, hasTtl: ttl > 0 }).toEqual({ key, hasTtl: true });
    }
    expect(keys.every((k) => /\{[st]:[^}]+\}/.test(k))).toBe(true);
    await deleteKeys(prefix);
  });

  it('still runs its scripts after the server forgets them (SCRIPT FLUSH)', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix });
    await redis.script('FLUSH');
    const e = { id: 'c', name: 'calculate', status: 'ok' as const, durationMs: 1, round: 'rnd', run: 'r1', at: 'x' };
    expect(await store.recordResult('s1', 0, e)).toBe(true);
    expect(await store.recordResult('s1', 0, e)).toBe(false);
    await deleteKeys(prefix);
  });

  it('reports ping false when Redis is unreachable', async () => {
    const dead = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    dead.on('error', () => {});
    const store = new RedisStore({ redis: dead, prefix: randomPrefix() });
    expect(await store.ping()).toBe(false);
    dead.disconnect();
  });
});
