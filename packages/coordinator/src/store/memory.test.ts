import { describe, expect, it } from 'vitest';
import type { SessionState } from '../model.js';
import { MemoryStore } from './memory.js';
import { describeStoreContract } from './store.contract.js';

describeStoreContract('MemoryStore', async (options) => ({ store: new MemoryStore(options), cleanup: async () => {} }));

describe('MemoryStore session idle TTL (TD_SESSION_TTL_MS)', () => {
  const clock = { now: 1_000_000 };
  const session = (id: string): SessionState => ({
    id,
    tenant: 'default',
    provider: 'openai',
    autoApprove: [],
    clientTools: [],
    loaded: [],
    fetched: [],
    workspace: '/nowhere',
    createdAt: clock.now,
    updatedAt: clock.now,
  });
  const begin = (store: MemoryStore, s: string, key?: string) =>
    store.beginRound({ session: s, run: 'r', round: `rnd_${clock.now}`, idempotencyKey: key, callsHash: 'h' });

  it('drops a session idle past the TTL with its history, dedupe map, rounds and idempotency keys', async () => {
    const store = new MemoryStore({ now: () => clock.now, sessionTtlMs: 10_000 });
    await store.putSession(session('s1'));
    const round = `rnd_${clock.now}`;
    expect((await begin(store, 's1', 'k1')).kind).toBe('new');
    await store.putDedupe('s1', 'r', { key: 'd', tool: 'read_files', callId: 'c', round: 'x', output: {} });
    await store.commitRound({ session: 's1', tenant: 'default', run: 'r', round, items: [] });
    clock.now += 10_000;
    expect(await store.getSession('s1')).toBeNull();
    expect(await store.findDedupe('s1', 'r', 'd')).toBeNull();
    expect(await store.history('s1')).toEqual([]);
    expect(await store.getRound('s1', 'r', round)).toBeNull();
    expect(store.size).toBe(0);
  });

  it('keeps a session used within the TTL: every read or write slides it', async () => {
    const store = new MemoryStore({ now: () => clock.now, sessionTtlMs: 10_000 });
    await store.putSession(session('s2'));
    for (let i = 0; i < 5; i++) {
      clock.now += 9_000;
      expect(await store.getSession('s2')).not.toBeNull();
    }
  });

  it('sweeps idle sessions nobody asks for again, so memory stays bounded by live sessions', async () => {
    const store = new MemoryStore({ now: () => clock.now, sessionTtlMs: 10_000 });
    for (let i = 0; i < 100; i++) await store.putSession(session(`idle-${i}`));
    expect(store.size).toBe(100);
    clock.now += 10_000;
    await store.putSession(session('fresh'));
    expect(store.size).toBe(1);
  });

  it('refuses a TTL that is not a positive integer', () => {
    expect(() => new MemoryStore({ sessionTtlMs: 0 })).toThrow('sessionTtlMs must be a positive integer, got 0');
  });
});
