import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../../../test/support/redis.js';
import { MemoryLedger, type RoundLedger } from './ledger.js';
import { RedisLedger } from './store/ledger-redis.js';

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
}, 60_000);
afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  ['MemoryLedger', () => new MemoryLedger() as RoundLedger],
  ['RedisLedger', () => new RedisLedger(redis, randomPrefix()) as RoundLedger],
])('%s', (_name, make) => {
  const ref = { session: 's1', run: 'r1', round: 'rnd_1' };

  it('lets nobody take over a round whose lease is still held', async () => {
    const ledger = make();
    expect(await ledger.claim(ref, 'a', 10_000, false)).toBe(true);
    expect(await ledger.claim(ref, 'b', 10_000, true)).toBe(false);
    expect(await ledger.lapsed(Date.now(), 10)).toEqual([]);
  });

  it('lists a lapsed lease and gives it to exactly one claimer', async () => {
    const ledger = make();
    await ledger.claim(ref, 'a', 20, false);
    await sleep(40);
    expect(await ledger.lapsed(Date.now(), 10)).toEqual([ref]);
    const claims = await Promise.all([ledger.claim(ref, 'b', 10_000, true), ledger.claim(ref, 'c', 10_000, true)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('renews only for the owner, and not after another coordinator took the round', async () => {
    const ledger = make();
    await ledger.claim(ref, 'a', 20, false);
    expect(await ledger.renew(ref, 'a', 20)).toBe(true);
    await sleep(40);
    expect(await ledger.claim(ref, 'b', 10_000, true)).toBe(true);
    expect(await ledger.renew(ref, 'a', 10_000)).toBe(false);
    expect(await ledger.renew(ref, 'b', 10_000)).toBe(true);
  });

  it('keeps progress until release, and a released round is no longer listed', async () => {
    const ledger = make();
    await ledger.claim(ref, 'a', 10, false);
    await ledger.save(ref, { phase: 'commit', calls: [{ id: 'x' }], results: [] });
    expect(await ledger.load(ref)).toEqual({ phase: 'commit', calls: [{ id: 'x' }], results: [] });
    await ledger.release(ref);
    await sleep(20);
    expect(await ledger.lapsed(Date.now(), 10)).toEqual([]);
  });
});
