import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Semaphore } from './semaphore.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('Semaphore', () => {
  it('lets at most its limit hold a place and grants the waiters in order', async () => {
    const s = new Semaphore(2);
    const order: number[] = [];
    const releases = await Promise.all([s.acquire(), s.acquire()]);
    const waiting = [3, 4, 5].map((n) =>
      s.acquire().then((release) => {
        order.push(n);
        return release;
      }),
    );
    await tick();
    expect(order).toEqual([]);
    expect(s.load).toBe(5);
    releases[0]?.();
    await tick();
    expect(order).toEqual([3]);
    releases[1]?.();
    (await waiting[0])?.();
    await tick();
    expect(order).toEqual([3, 4, 5]);
  });

  it('keeps one abort listener on a signal however many of its calls wait, and none once they are granted', async () => {
    const s = new Semaphore(1);
    const controller = new AbortController();
    const first = await s.acquire(controller.signal);
    const waiters = Array.from({ length: 50 }, () => s.acquire(controller.signal));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    first();
    for (const w of waiters) (await w)();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(s.load).toBe(0);
  });

  it('rejects every waiter of an aborted signal and keeps the others waiting', async () => {
    const s = new Semaphore(1);
    const run = new AbortController();
    const other = new AbortController();
    const held = await s.acquire();
    const cancelled = [s.acquire(run.signal), s.acquire(run.signal)];
    const kept = s.acquire(other.signal);
    run.abort(new Error('run cancelled'));
    for (const c of cancelled) await expect(c).rejects.toThrow('run cancelled');
    held();
    (await kept)();
    expect(s.load).toBe(0);
  });

  it('refuses a signal that is already aborted when it would have to wait', async () => {
    const s = new Semaphore(1);
    await s.acquire();
    await expect(s.acquire(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(s.load).toBe(1);
  });
});
