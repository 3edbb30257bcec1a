import { describe, expect, it } from 'vitest';
import type { DispatchEvent } from './event-bus.js';
import { MemoryEventBus } from './memory.js';

async function replayed(bus: MemoryEventBus, lastEventId: string | undefined): Promise<unknown[]> {
  const events: DispatchEvent[] = [];
  const unsubscribe = await bus.subscribe('s1', lastEventId, (e) => events.push(e));
  unsubscribe();
  return events.map((e) => e.data.n);
}

describe('MemoryEventBus', () => {
  it('replays what came after a Last-Event-ID it issued, and nothing without one', async () => {
    const bus = new MemoryEventBus();
    await bus.publish('s1', 'round.started', { n: 1 });
    await bus.publish('s1', 'round.completed', { n: 2 });
    expect(await replayed(bus, '1')).toEqual([2]);
    expect(await replayed(bus, '2')).toEqual([]);
    expect(await replayed(bus, undefined)).toEqual([]);
  });

  it('replays the whole window for a Last-Event-ID it did not issue ("0", another format, a later id)', async () => {
    const bus = new MemoryEventBus();
    await bus.publish('s1', 'round.started', { n: 1 });
    await bus.publish('s1', 'round.completed', { n: 2 });
    for (const id of ['0', 'not-an-id', '1712345678901-0', '99']) expect(await replayed(bus, id), id).toEqual([1, 2]);
  });

  it('leaves out events older than the replay window', async () => {
    const clock = { now: 1_000_000 };
    const bus = new MemoryEventBus(() => clock.now, 1_000);
    await bus.publish('s1', 'round.started', { n: 1 });
    clock.now += 2_000;
    await bus.publish('s1', 'round.started', { n: 2 });
    expect(await replayed(bus, '0')).toEqual([2]);
  });

  it('forgets a session whose events all left the replay window, once another session publishes', async () => {
    const clock = { now: 1_000_000 };
    const bus = new MemoryEventBus(() => clock.now, 1_000);
    await bus.publish('gone', 'round.started', { n: 1 });
    clock.now += 2_000;
    await bus.publish('other', 'round.started', { n: 2 });
    const seen: unknown[] = [];
    const stop = await bus.subscribe('gone', '0', (e) => seen.push(e.data));
    stop();
    expect(seen).toEqual([]);
    expect((bus as unknown as { logs: Map<string, unknown> }).logs.has('gone')).toBe(false);
  });
});
