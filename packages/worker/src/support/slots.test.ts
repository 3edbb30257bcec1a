import { describe, expect, it } from 'vitest';
import { Slots } from './slots.js';

describe('Slots', () => {
  it('hands out a free slot at once, and none past the limit', () => {
    const slots = new Slots(2);
    const first = slots.tryAcquire();
    const second = slots.tryAcquire();
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(slots.tryAcquire()).toBeUndefined();
    first?.();
    expect(slots.tryAcquire()).toBeTypeOf('function');
  });

  it('gives a released slot to the first waiter, not to a later tryAcquire', async () => {
    const slots = new Slots(1);
    const release = slots.tryAcquire();
    const order: string[] = [];
    const waiter = slots.acquire().then((r) => {
      order.push('waiter');
      return r;
    });
    release?.();
    expect(slots.tryAcquire()).toBeUndefined();
    (await waiter)();
    expect(order).toEqual(['waiter']);
    expect(slots.tryAcquire()).toBeTypeOf('function');
  });

  it('ignores a second release of the same slot', () => {
    const slots = new Slots(1);
    const release = slots.tryAcquire();
    release?.();
    release?.();
    expect(slots.tryAcquire()).toBeTypeOf('function');
    expect(slots.tryAcquire()).toBeUndefined();
  });
});
