import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../../../../test/support/redis.js';
import type { DispatchEvent } from './event-bus.js';
import { RedisEventBus } from './redis.js';

let server: TestRedis;
const connections: Redis[] = [];
const buses: RedisEventBus[] = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.close()));
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await server?.stop();
});

/** A bus on its own connection, as on a separate coordinator. */
function makeBus(prefix: string, replayMs?: number): RedisEventBus {
  const redis = new Redis(server.url);
  connections.push(redis);
  const bus = new RedisEventBus({ redis, prefix, blockMs: 1_000, ...(replayMs === undefined ? {} : { replayMs }) });
  buses.push(bus);
  return bus;
}

function collector() {
  const events: DispatchEvent[] = [];
  const waitFor = async (n: number, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    while (events.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return events;
  };
  return { events, onEvent: (e: DispatchEvent) => events.push(e), waitFor };
}

describe('RedisEventBus', () => {
  it('delivers events published on another coordinator, in order, with stream ids', async () => {
    const prefix = randomPrefix();
    const a = makeBus(prefix);
    const b = makeBus(prefix);
    const c = collector();
    await b.subscribe('s1', undefined, c.onEvent);
    await a.publish('s1', 'round.started', { round: 'rnd_1' });
    await a.publish('s1', 'tool.result', { round: 'rnd_1', id: 'c1' });
    await a.publish('s1', 'round.completed', { round: 'rnd_1' });
    const events = await c.waitFor(3);
    expect(events.map((e) => e.name)).toEqual(['round.started', 'tool.result', 'round.completed']);
    expect(events[1]?.data).toEqual({ round: 'rnd_1', id: 'c1' });
    expect(events.every((e) => /^\d+-\d+$/.test(e.id) && e.at > 0)).toBe(true);
  });

  it('delivers events published together in their order', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    const c = collector();
    await bus.subscribe('s1', undefined, c.onEvent);
    await bus.publishMany('s1', [
      { name: 'tool.result', data: { id: 'c1' } },
      { name: 'tool.result', data: { id: 'c2' } },
      { name: 'round.completed', data: {} },
    ]);
    await bus.publishMany('s1', []);
    const events = await c.waitFor(3);
    expect(events.map((e) => [e.name, e.data.id])).toEqual([
      ['tool.result', 'c1'],
      ['tool.result', 'c2'],
      ['round.completed', undefined],
    ]);
  });

  it('replays only what came after Last-Event-ID, then tails', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    const first = collector();
    const unsubscribe = await bus.subscribe('s1', undefined, first.onEvent);
    await bus.publish('s1', 'round.started', { n: 1 });
    await bus.publish('s1', 'round.completed', { n: 2 });
    const [seen] = await first.waitFor(2);
    unsubscribe();
    await bus.publish('s1', 'round.started', { n: 3 });
    const again = collector();
    await makeBus(prefix).subscribe('s1', seen?.id, again.onEvent);
    await bus.publish('s1', 'round.completed', { n: 4 });
    const events = await again.waitFor(3);
    expect(events.map((e) => e.data.n)).toEqual([2, 3, 4]);
  });

  it('replays the whole window for a Last-Event-ID it did not issue ("0", another format, a later id), then tails', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    await bus.publish('s1', 'round.started', { n: 1 });
    await bus.publish('s1', 'round.completed', { n: 2 });
    for (const id of ['0', 'not-an-id', '17', '99999999999999-0']) {
      const c = collector();
      await bus.subscribe('s1', id, c.onEvent);
      expect(
        (await c.waitFor(2)).map((e) => e.data.n),
        id,
      ).toEqual([1, 2]);
    }
    const live = collector();
    await bus.subscribe('s1', '99999999999999-0', live.onEvent);
    await bus.publish('s1', 'round.started', { n: 3 });
    expect((await live.waitFor(3)).map((e) => e.data.n)).toEqual([1, 2, 3]);
  });

  it('replays nothing without a Last-Event-ID', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    await bus.publish('s1', 'round.started', { n: 1 });
    const c = collector();
    await bus.subscribe('s1', undefined, c.onEvent);
    await bus.publish('s1', 'round.completed', { n: 2 });
    expect((await c.waitFor(1)).map((e) => e.data.n)).toEqual([2]);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events).toHaveLength(1);
  });

  it('keeps sessions apart', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    const c = collector();
    await bus.subscribe('s1', undefined, c.onEvent);
    await bus.publish('s2', 'round.started', { s: 2 });
    await bus.publish('s1', 'round.started', { s: 1 });
    expect((await c.waitFor(1)).map((e) => e.data.s)).toEqual([1]);
    await new Promise((r) => setTimeout(r, 100));
    expect(c.events).toHaveLength(1);
  });

  it('does not replay events older than the window', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix, 300);
    const first = collector();
    await bus.subscribe('s1', undefined, first.onEvent);
    await bus.publish('s1', 'round.started', { n: 1 });
    await bus.publish('s1', 'round.started', { n: 2 });
    const [e1] = await first.waitFor(2);
    await new Promise((r) => setTimeout(r, 400));
    await bus.publish('s1', 'round.started', { n: 3 });
    const late = collector();
    await bus.subscribe('s1', e1?.id, late.onEvent);
    await new Promise((r) => setTimeout(r, 100));
    expect(late.events.map((e) => e.data.n)).toEqual([3]);
  });

  it('flush waits until live subscribers have read what was published (for shutdown)', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    const c = collector();
    await bus.subscribe('s', undefined, c.onEvent);
    await bus.publishMany('s', [
      { name: 'tool.result', data: { id: 'a' } },
      { name: 'round.completed', data: { round: 'r' } },
    ]);
    await bus.flush(5_000);
    expect(c.events.map((e) => e.name)).toEqual(['tool.result', 'round.completed']);
  });

  it('stops delivering after unsubscribe', async () => {
    const prefix = randomPrefix();
    const bus = makeBus(prefix);
    const c = collector();
    const unsubscribe = await bus.subscribe('s1', undefined, c.onEvent);
    await bus.publish('s1', 'round.started', { n: 1 });
    await c.waitFor(1);
    unsubscribe();
    await bus.publish('s1', 'round.started', { n: 2 });
    await new Promise((r) => setTimeout(r, 200));
    expect(c.events).toHaveLength(1);
  });

  it('gives the stream a TTL past the replay window', async () => {
    const prefix = randomPrefix();
    const redis = new Redis(server.url);
    connections.push(redis);
    const bus = new RedisEventBus({ redis, prefix, replayMs: 60_000 });
    await bus.publish('s1', 'round.started', {});
    const key = `${prefix}:{s:s1}:events`;
    expect(await redis.pttl(key)).toBeGreaterThan(60_000);
  });

  it('gives a stream without a TTL one again on the next event (as after a Redis restart)', async () => {
    const prefix = randomPrefix();
    const redis = new Redis(server.url);
    connections.push(redis);
    const bus = new RedisEventBus({ redis, prefix, replayMs: 60_000 });
    const key = `${prefix}:{s:s1}:events`;
    await bus.publish('s1', 'round.started', {});
    await redis.persist(key);
    await bus.publish('s1', 'round.completed', {});
    expect(await redis.pttl(key)).toBeGreaterThan(60_000);
  });
});
