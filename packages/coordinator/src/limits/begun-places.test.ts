import { connectRedis, type RedisClient } from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import type { SessionState } from '../model.js';
import { RedisStore } from '../store/redis.js';
import { type LimitRelease, type LimitStage, runStages, runTicketOf } from './limits.js';
import { RedisLimits } from './redis.js';

// (v1.3) A run's places taken in the round's begin step and given back in its commit step
// (RedisStore.beginRound / commitRound with RedisLimits' ask), and given back early, as each call
// ends, when a call waits at the limit: on the real scripts, two coordinators on one Redis.

let url = '';
let admin: Redis;
useRedis((server, redis) => {
  url = server.url;
  admin = redis;
});

const ref = { session: 's1', run: 'r1' };

function session(id: string): SessionState {
  return {
    id,
    provider: 'openai',
    tenant: 'default',
    autoApprove: [],
    clientTools: [],
    loaded: ['find_tools', 'run_tool'],
    fetched: [],
    workspace: `/tmp/ws/${id}`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
  };
}

/** A coordinator's store and limits on a connection of its own. */
async function coordinator(prefix: string) {
  const redis: RedisClient = connectRedis({ url });
  const store = new RedisStore({ redis, prefix });
  const limits = new RedisLimits({ redis, prefix, leaseMs: 5_000 });
  await store.putSession(session(ref.session));
  const runStage = (max: number) => runStages(ref, 'concurrent', max)[0] as LimitStage;
  return {
    store,
    limits,
    runStage,
    /** Begins `round` with `calls` calls, asking for their places in the begin (`max` in all). */
    async begin(round: string, calls: number, max: number) {
      const tickets = Array.from({ length: calls }, (_, i) => runTicketOf(round, i));
      const places = limits.askAtBegin(runStage(max), tickets);
      if (!places) throw new Error('RedisLimits asked for no places');
      const begun = await store.beginRound({ ...ref, round, idempotencyKey: undefined, callsHash: '', places });
      if (begun.kind !== 'new') throw new Error(`begin: ${begun.kind}`);
      if (begun.placesTaken) limits.took(round, places);
      return { taken: begun.placesTaken === true, tickets, held: places.held };
    },
    /** Commits `round` (no items), its places given back in the commit's step. */
    async commit(round: string) {
      const giveBack = limits.giveBackAtCommit(round);
      const out = await store.commitRound({
        ...ref,
        tenant: 'default',
        round,
        items: [],
        ...(giveBack ? { giveBack } : {}),
      });
      limits.roundEnded(round, out.waiters === undefined ? undefined : { waiters: out.waiters });
      return { giveBack, ...out };
    },
    async close() {
      await limits.close();
      redis.disconnect();
    },
  };
}

/** Resolves once `p` has (or not) within the macrotasks it takes Redis to answer a few round trips. */
async function settledSoon(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setTimeout(r, 150));
  return done;
}

describe('a round’s places taken in its begin step (RedisLimits + RedisStore)', () => {
  it('takes them when they are free, gives each to its call at once, and gives them back with the commit', async () => {
    const a = await coordinator(randomPrefix());
    const { taken, tickets, held } = await a.begin('rnd_1', 3, 5);
    expect(taken).toBe(true);
    expect(await admin.zrange(held, '0', '-1')).toEqual([...tickets].sort());
    const stages = runStages(ref, 'concurrent', 5);
    // Each call finds its place with no script (synchronously), once: a second ask is an ordinary one.
    const releases = tickets.map((t) => a.limits.tryAcquire(stages, t));
    expect(releases.every((r) => typeof r === 'function')).toBe(true);
    expect(a.limits.tryAcquire(stages, tickets[0])).toBeUndefined();
    for (const r of releases) (r as LimitRelease)();
    // Nobody waits: the places stay till the commit, which gives them back in its own step.
    expect(await admin.zcard(held)).toBe(3);
    const out = await a.commit('rnd_1');
    expect(out.giveBack?.tickets.sort()).toEqual([...tickets].sort());
    expect(out.waiters).toBe(false);
    expect(await admin.exists(held)).toBe(0);
    await a.close();
  });

  it('takes none when the round needs more than are free, or when a call waits for one', async () => {
    const prefix = randomPrefix();
    const a = await coordinator(prefix);
    const b = await coordinator(prefix);
    const first = await a.begin('rnd_1', 2, 3);
    expect(first.taken).toBe(true);
    const stages = runStages(ref, 'concurrent', 3);
    // Its calls run (a waiter would get the places no call holds).
    const running = first.tickets.map((t) => a.limits.tryAcquire(stages, t) as LimitRelease);
    // 2 of 3 held: a round of 2 asks for more than is free.
    const second = await a.begin('rnd_2', 2, 3);
    expect(second.taken).toBe(false);
    expect(await admin.zcard(first.held)).toBe(2);
    // A call of another coordinator takes the last place, and one more waits.
    const last = await b.limits.acquire(stages);
    const waiting = b.limits.acquire(stages);
    // The waiter's turn comes first: even a round of one takes nothing while it waits.
    expect(await settledSoon(waiting)).toBe(false);
    const third = await a.begin('rnd_3', 1, 3);
    expect(third.taken).toBe(false);
    last();
    (await waiting)();
    for (const r of running) r();
    await a.commit('rnd_1');
    await Promise.all([a.close(), b.close()]);
  });

  it('gives a place to a call waiting on another coordinator as soon as a call of the round ends, not at the commit', async () => {
    const prefix = randomPrefix();
    const a = await coordinator(prefix);
    const b = await coordinator(prefix);
    const { taken, tickets } = await a.begin('rnd_1', 2, 2);
    expect(taken).toBe(true);
    const stages = runStages(ref, 'concurrent', 2);
    const [first, second] = tickets.map((t) => a.limits.tryAcquire(stages, t) as LimitRelease);
    const waiting = b.limits.acquire(stages);
    expect(await settledSoon(waiting)).toBe(false);
    (first as LimitRelease)();
    // The round has not committed (its second call still runs): the waiter has the freed place.
    (await waiting)();
    (second as LimitRelease)();
    const out = await a.commit('rnd_1');
    expect(out.giveBack).toBeUndefined(); // every place went back as its call ended
    await Promise.all([a.close(), b.close()]);
  });

  it('gives a waiter at once the places its round took and no call of it holds', async () => {
    const prefix = randomPrefix();
    const a = await coordinator(prefix);
    const b = await coordinator(prefix);
    const { tickets } = await a.begin('rnd_1', 2, 2);
    const stages = runStages(ref, 'concurrent', 2);
    const running = a.limits.tryAcquire(stages, tickets[0]) as LimitRelease;
    // The round's second call never asks for its place (pass 1 answered it): the waiter gets it.
    (await b.limits.acquire(stages))();
    running();
    await a.commit('rnd_1');
    await Promise.all([a.close(), b.close()]);
  });

  it('gives its places back when the round ends without a commit (failed, fenced)', async () => {
    const a = await coordinator(randomPrefix());
    const { held } = await a.begin('rnd_1', 3, 5);
    expect(await admin.zcard(held)).toBe(3);
    a.limits.roundEnded('rnd_1');
    await new Promise((r) => setTimeout(r, 100));
    expect(await admin.exists(held)).toBe(0);
    await a.close();
  });

  it('leaves a place to the grant of a call that asks one by one under its ticket (a serial call takes its lane first)', async () => {
    const prefix = randomPrefix();
    const a = await coordinator(prefix);
    const { tickets, held } = await a.begin('rnd_1', 2, 2);
    const serial = runStages(ref, 'serial', 2);
    expect(a.limits.tryAcquire(serial, tickets[1])).toBeUndefined();
    const release = await a.limits.acquire(serial, undefined, undefined, tickets[1]);
    // Its place is the one the begin took (no third place): the grant now holds it, the commit does not.
    expect(await admin.zcard(held)).toBe(2);
    const out = await a.commit('rnd_1');
    expect(out.giveBack?.tickets).toEqual([tickets[0]]);
    expect(await admin.zrange(held, '0', '-1')).toEqual([tickets[1]]);
    release();
    await new Promise((r) => setTimeout(r, 100));
    expect(await admin.exists(held)).toBe(0);
    await a.close();
  });

  it('tells the committer when a call waits at the limit its places went back to', async () => {
    const prefix = randomPrefix();
    const a = await coordinator(prefix);
    // The begin's places, and a waiter no RedisLimits of this committer heard of (a lost message).
    const { tickets, held } = await a.begin('rnd_1', 1, 1);
    await a.limits.close(); // nothing hears, nothing gives back early
    await admin.zadd(held.replace(/:held$/, ':wait'), 1, 'elsewhere:0');
    const out = await a.store.commitRound({
      ...ref,
      tenant: 'default',
      round: 'rnd_1',
      items: [],
      giveBack: { held, wait: held.replace(/:held$/, ':wait'), tickets },
    });
    expect(out).toEqual({ fenced: false, waiters: true });
    expect(await admin.exists(held)).toBe(0);
    await a.close();
  });
});
