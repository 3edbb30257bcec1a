import { describe, expect, it } from 'vitest';
import { MemoryEventBus } from '../events/memory.js';
import { RoundWaiters } from './round-waiters.js';

describe('RoundWaiters', () => {
  it('wakes the waiters of a round at its round.completed, through one subscription per session, gone with the last waiter', async () => {
    const events = new MemoryEventBus();
    let subscriptions = 0;
    const counted = {
      subscribe: (...args: Parameters<MemoryEventBus['subscribe']>) => {
        subscriptions++;
        return events.subscribe(...args);
      },
    };
    const waiters = new RoundWaiters(counted);
    const ref = { session: 's1', run: 'r1', round: 'rnd_a' };
    const first = await waiters.listen(ref);
    const second = await waiters.listen(ref);
    const other = await waiters.listen({ ...ref, round: 'rnd_b' });
    expect(subscriptions).toBe(1);
    const woken: string[] = [];
    void first.ended.then(() => woken.push('first'));
    void second.ended.then(() => woken.push('second'));
    void other.ended.then(() => woken.push('other'));
    await events.publish('s1', 'round.started', { round: 'rnd_a', run: 'r1' });
    await events.publish('s1', 'round.completed', { round: 'rnd_a', run: 'r1' });
    await first.ended;
    await second.ended;
    expect(woken.sort()).toEqual(['first', 'second']);
    for (const w of [first, second, other]) w.stop();
    expect(waiters.size).toBe(0);
    // A new waiter subscribes again.
    (await waiters.listen(ref)).stop();
    expect(subscriptions).toBe(2);
  });
});
