import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../../../../test/support/redis.js';
import type { PendingConfirmation } from './confirm-hub.js';
import { RedisConfirmHub } from './redis.js';

let server: TestRedis;
const connections: Redis[] = [];
const hubs: RedisConfirmHub[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await server?.stop();
});

/** A hub on its own connection, as on a separate coordinator. */
function makeHub(prefix: string, pollIntervalMs = 60_000): RedisConfirmHub {
  const redis = new Redis(server.url);
  connections.push(redis);
  const hub = new RedisConfirmHub({ redis, prefix, pollIntervalMs });
  hubs.push(hub);
  return hub;
}

function item(confirmationId: string, over: Partial<PendingConfirmation> = {}): PendingConfirmation {
  return {
    confirmationId,
    session: 's1',
    round: 'rnd_1',
    run: 'r1',
    callId: `call-${confirmationId}`,
    name: 'run_command',
    args: { command: 'ls' },
    createdAt: Date.now(),
    ...over,
  };
}

const waitUntil = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('RedisConfirmHub', () => {
  it('delivers an answer given on another coordinator to the requester', async () => {
    const prefix = randomPrefix();
    const requester = makeHub(prefix);
    const other = makeHub(prefix);
    const decided = requester.request([item('cf_1'), item('cf_2')], {
      timeoutMs: 10_000,
      signal: new AbortController().signal,
    });
    await waitUntil(async () => (await other.pending('s1')).length === 2);
    expect((await other.pending('s1')).map((p) => p.confirmationId)).toEqual(['cf_1', 'cf_2']);
    expect(await other.answer('s1', 'cf_1', { approve: true, remember: true, who: 'alice' })).toMatchObject({
      kind: 'answered',
      confirmation: { confirmationId: 'cf_1' },
    });
    expect((await other.answer('s1', 'call-cf_2', { approve: false, remember: false })).kind).toBe('answered');
    expect(await decided).toEqual([
      { approve: true, remember: true, by: 'person', who: 'alice', at: expect.any(Number) },
      { approve: false, remember: false, by: 'person', who: 'person', at: expect.any(Number) },
    ]);
    expect(await requester.pending('s1')).toEqual([]);
  });

  it('answers each confirmation once', async () => {
    const prefix = randomPrefix();
    const hub = makeHub(prefix);
    const decided = hub.request([item('cf_1')], { timeoutMs: 10_000, signal: new AbortController().signal });
    await waitUntil(async () => (await hub.pending('s1')).length === 1);
    expect((await hub.answer('s1', 'cf_1', { approve: true, remember: false })).kind).toBe('answered');
    expect((await hub.answer('s1', 'cf_1', { approve: false, remember: false })).kind).toBe('not_found');
    expect(await decided).toEqual([
      { approve: true, remember: false, by: 'person', who: 'person', at: expect.any(Number) },
    ]);
  });

  it('reports ambiguity when several pending confirmations share the callId', async () => {
    const prefix = randomPrefix();
    const hub = makeHub(prefix);
    const signal = new AbortController().signal;
    void hub.request([item('cf_1', { callId: 'c1', round: 'rnd_1' })], { timeoutMs: 10_000, signal });
    void hub.request([item('cf_2', { callId: 'c1', round: 'rnd_2' })], { timeoutMs: 10_000, signal });
    await waitUntil(async () => (await hub.pending('s1')).length === 2);
    expect(await hub.answer('s1', 'c1', { approve: true, remember: false })).toEqual({ kind: 'ambiguous', count: 2 });
    expect(await hub.answer('s1', 'nope', { approve: true, remember: false })).toEqual({ kind: 'not_found' });
    expect(await hub.answer('s2', 'cf_1', { approve: true, remember: false })).toEqual({ kind: 'not_found' });
  });

  it('denies by timeout what nobody answered in time, and removes it from pending', async () => {
    const prefix = randomPrefix();
    const hub = makeHub(prefix);
    const decided = await hub.request([item('cf_1')], { timeoutMs: 150, signal: new AbortController().signal });
    expect(decided).toEqual([{ approve: false, remember: false, by: 'timeout' }]);
    expect(await hub.pending('s1')).toEqual([]);
    expect((await hub.answer('s1', 'cf_1', { approve: true, remember: false })).kind).toBe('not_found');
  });

  it('ends as cancelled when the signal aborts', async () => {
    const prefix = randomPrefix();
    const hub = makeHub(prefix);
    const ac = new AbortController();
    const decided = hub.request([item('cf_1'), item('cf_2')], { timeoutMs: 10_000, signal: ac.signal });
    await waitUntil(async () => (await hub.pending('s1')).length === 2);
    await hub.answer('s1', 'cf_1', { approve: true, remember: false });
    ac.abort();
    expect(await decided).toEqual([
      { approve: true, remember: false, by: 'person', who: 'person', at: expect.any(Number) },
      { approve: false, remember: false, by: 'cancelled' },
    ]);
    expect(await hub.pending('s1')).toEqual([]);
  });

  it('finds an answer whose message it missed by reading the recorded decision', async () => {
    const prefix = randomPrefix();
    const requester = makeHub(prefix, 50);
    const decided = requester.request([item('cf_1')], { timeoutMs: 10_000, signal: new AbortController().signal });
    const raw = new Redis(server.url);
    connections.push(raw);
    await waitUntil(async () => (await raw.hlen(`${prefix}:{s:s1}:confirm:pending`)) === 1);
    // An answer recorded without a pub/sub message (as if the message were lost).
    await raw.hdel(`${prefix}:{s:s1}:confirm:pending`, 'cf_1');
    await raw.hset(
      `${prefix}:{s:s1}:confirm:decided`,
      'cf_1',
      JSON.stringify({ approve: true, remember: false, by: 'person' }),
    );
    expect(await decided).toEqual([{ approve: true, remember: false, by: 'person' }]);
  });
});
