import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import type { DispatchEvent } from '../events/event-bus.js';
import { RedisEventBus } from '../events/redis.js';
import type { SessionState } from '../model.js';
import { RedisStore } from './redis.js';
import { describeStoreContract } from './store.contract.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

async function deleteKeys(prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
}

describeStoreContract('RedisStore', async (options) => {
  const prefix = randomPrefix();
  return { store: new RedisStore({ redis, prefix, ...options }), cleanup: () => deleteKeys(prefix) };
});

const sessionS1: SessionState = {
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
};

describe('RedisStore on Redis', () => {
  it('puts a TTL on every key it writes', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix, sessionTtlMs: 60_000 });
    await store.putSession(sessionS1);
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
    await store.beginRound({
      session: 's1',
      run: 'r2',
      round: 'rnd2',
      idempotencyKey: 'key',
      callsHash: 'h',
      owner: 'c1',
      calls: [],
    });
    await store.commitRound({
      session: 's1',
      tenant: 't1',
      run: 'r2',
      round: 'rnd2',
      owner: 'c1',
      items: [
        {
          callIndex: 0,
          entry: { id: 'c', name: 'fetch_page', status: 'ok', durationMs: 1, round: 'rnd2', run: 'r2', at: 'x' },
          dedupe: { key: 'k2', tool: 'fetch_page', callId: 'c', round: 'rnd2', output: 1 },
          cache: { key: 'k2', value: { output: 1, callId: 'c', round: 'rnd2', storedAt: 1 }, ttlMs: 60_000 },
        },
      ],
    });
    const keys = await redis.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThanOrEqual(10);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect({ key, hasTtl: ttl > 0 }).toEqual({ key, hasTtl: true });
    }
    expect(keys.every((k) => /\{[st]:[^}]+\}/.test(k))).toBe(true);
    await deleteKeys(prefix);
  });

  it('answers a beginRound run twice for one round (resent after a reconnect) new both times, writing it once', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix, events: {} });
    await store.putSession(sessionS1);
    const started = { round: 'rnd', run: 'r1', calls: [{ id: 'c1', name: 'calculate' }] };
    const begin = () =>
      store.beginRound({
        session: 's1',
        run: 'r1',
        round: 'rnd',
        idempotencyKey: 'k',
        callsHash: 'h',
        owner: 'a',
        started,
      });
    expect((await begin()).kind).toBe('new');
    // The same command again, as ioredis resends one whose reply was lost: still this round's to run.
    expect((await begin()).kind).toBe('new');
    const events = await redis.xrange(`${prefix}:{s:s1}:events`, '-', '+');
    expect(events.filter(([, fields]) => fields.includes('round.started'))).toHaveLength(1);
    // Another submission under the key is still answered with the round that holds it.
    const retry = await store.beginRound({
      session: 's1',
      run: 'r1',
      round: 'rnd_2',
      idempotencyKey: 'k',
      callsHash: 'h',
    });
    expect(retry).toMatchObject({ kind: 'existing', record: { round: 'rnd' } });
    await deleteKeys(prefix);
  });

  it("appends a round's events with its begin and its commit, to the stream RedisEventBus reads", async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix, events: {} });
    const bus = new RedisEventBus({ redis, prefix });
    expect(store.appendsEvents).toBe(true);
    await store.putSession(sessionS1);
    const seen: DispatchEvent[] = [];
    const stop = await bus.subscribe('s1', undefined, (e) => seen.push(e));
    const started = { round: 'rnd', run: 'r1', calls: [{ id: 'c1', name: 'calculate' }] };
    const begin = (round: string, key: string) =>
      store.beginRound({ session: 's1', run: 'r1', round, idempotencyKey: key, callsHash: 'h', owner: 'a', started });
    expect((await begin('rnd', 'key')).kind).toBe('new');
    // A retry under the same key begins nothing, and says nothing.
    expect((await begin('rnd_2', 'key')).kind).toBe('existing');
    const entry = (id: string) => ({
      id,
      name: 'calculate',
      status: 'ok' as const,
      output: 2,
      durationMs: 1,
      round: 'rnd',
      run: 'r1',
      at: 'x',
    });
    const commit = (owner: string) =>
      store.commitRound({
        session: 's1',
        tenant: 't1',
        run: 'r1',
        round: 'rnd',
        owner,
        items: [
          { callIndex: 0, entry: entry('c1') },
          { callIndex: 1, entry: entry('c2') },
        ],
        completed: { round: 'rnd', run: 'r1' },
      });
    // Fenced: another coordinator owns the round, so nothing is written, events neither.
    expect(await commit('b')).toEqual({ fenced: true });
    expect(await commit('a')).toEqual({ fenced: false });
    const until = Date.now() + 5_000;
    while (seen.length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(seen.map((e) => [e.name, e.data])).toEqual([
      ['round.started', started],
      ['tool.result', { round: 'rnd', run: 'r1', id: 'c1', name: 'calculate', status: 'ok', output: 2, durationMs: 1 }],
      ['tool.result', { round: 'rnd', run: 'r1', id: 'c2', name: 'calculate', status: 'ok', output: 2, durationMs: 1 }],
      ['round.completed', { round: 'rnd', run: 'r1' }],
    ]);
    expect(await redis.pttl(`${prefix}:{s:s1}:events`)).toBeGreaterThan(0);
    await bus.close();
    await deleteKeys(prefix);
  });

  it('still runs its scripts after the server forgets them (SCRIPT FLUSH)', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ redis, prefix });
    await redis.script('FLUSH');
    await store.putSession(sessionS1);
    await store.markFetched('s1', ['calculate']);
    expect((await store.getSession('s1'))?.fetched).toEqual(['calculate']);
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
