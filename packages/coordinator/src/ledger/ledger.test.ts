import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { runScript } from '../support/redis-client.js';
import { adoptScript } from './lua/adopt-4.lua.js';
import { MemoryLedger } from './memory.js';
import { RedisLedger } from './redis.js';
import type { RoundLedger } from './round-ledger.js';

let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  ['MemoryLedger', () => new MemoryLedger() as RoundLedger],
  ['RedisLedger', () => new RedisLedger(redis, randomPrefix()) as RoundLedger],
])('%s', (_name, make) => {
  const r1 = { session: 's1', run: 'r1', round: 'rnd_1' };
  const r2 = { session: 's2', run: 'r1', round: 'rnd_2' };

  it('lets nobody adopt the rounds of a coordinator whose lease is held', async () => {
    const ledger = make();
    await ledger.heartbeat('a', 10_000, []);
    await ledger.track(r1, 'a');
    expect(await ledger.adoptLapsed('b', Date.now())).toBeNull();
  });

  it("gives a lapsed coordinator's rounds to exactly one adopter, and only once", async () => {
    const ledger = make();
    await ledger.heartbeat('a', 20, []);
    await ledger.track(r1, 'a');
    await ledger.track(r2, 'a');
    await sleep(40);
    const now = Date.now();
    const adopted = await Promise.all([ledger.adoptLapsed('b', now), ledger.adoptLapsed('c', now)]);
    const winners = adopted.filter((x) => x !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.from).toBe('a');
    expect(winners[0]?.rounds.sort((x, y) => x.round.localeCompare(y.round))).toEqual([r1, r2]);
    expect(await ledger.adoptLapsed('c', Date.now())).toBeNull();
  });

  it('hands adopted rounds on again when the adopter dies in turn', async () => {
    const ledger = make();
    await ledger.heartbeat('a', 20, []);
    await ledger.track(r1, 'a');
    await ledger.heartbeat('b', 20, []);
    await sleep(40);
    // b adopts a's round (b's own lease lapsed too, but nobody adopts itself), then b lapses.
    const first = await ledger.adoptLapsed('b', Date.now());
    expect(first?.from).toBe('a');
    const second = await ledger.adoptLapsed('c', Date.now());
    expect(second).toEqual({ from: 'b', rounds: [r1] });
  });

  it('takes finished rounds off the list with the next heartbeat', async () => {
    const ledger = make();
    await ledger.heartbeat('a', 20, []);
    await ledger.track(r1, 'a');
    await ledger.track(r2, 'a');
    await ledger.heartbeat('a', 20, [r1]);
    await sleep(40);
    expect(await ledger.adoptLapsed('b', Date.now())).toEqual({ from: 'a', rounds: [r2] });
  });

  it('takes thousands of finished rounds off in one heartbeat, and adopts thousands at once', async () => {
    const ledger = make();
    // Past what one Lua unpack() takes (about 8000 values).
    const many = Array.from({ length: 20_000 }, (_, i) => ({ session: 's1', run: 'r1', round: `rnd_${i}` }));
    await ledger.heartbeat('a', 20, []);
    await Promise.all(many.map((r) => ledger.track(r, 'a')));
    await ledger.heartbeat('a', 20, many.slice(0, 10_000));
    await sleep(40);
    const adopted = await ledger.adoptLapsed('b', Date.now());
    expect(adopted?.rounds).toHaveLength(10_000);
    await ledger.heartbeat('b', 20, []);
    await sleep(40);
    expect((await ledger.adoptLapsed('c', Date.now()))?.rounds).toHaveLength(10_000);
  });

  it('forgets a coordinator that left', async () => {
    const ledger = make();
    await ledger.heartbeat('a', 20, []);
    await ledger.track(r1, 'a');
    await ledger.leave('a');
    await sleep(40);
    expect(await ledger.adoptLapsed('b', Date.now())).toBeNull();
  });
});

describe('RedisLedger on Redis', () => {
  it('answers an adoption run twice (resent after a dropped connection) with the same rounds, to its adopter only', async () => {
    const prefix = randomPrefix();
    const ledger = new RedisLedger(redis, prefix);
    await ledger.heartbeat('a', 20, []);
    await ledger.track({ session: 's1', run: 'r1', round: 'rnd_1' }, 'a');
    await sleep(40);
    const tag = `${prefix}:{coordinators}`;
    const adopt = (adopter: string) =>
      runScript(
        redis,
        adoptScript,
        [`${tag}:alive`, `${tag}:rounds:a`, `${tag}:rounds:${adopter}`, `${tag}:adopted:a`],
        ['a', Date.now(), 60_000, adopter, 60_000],
      );
    expect(await adopt('b')).toEqual(['s1|r1|rnd_1']);
    // The same command again, as ioredis resends one whose reply was lost: b still gets its rounds.
    expect(await adopt('b')).toEqual(['s1|r1|rnd_1']);
    expect(await adopt('c')).toBeNull();
  });
});
