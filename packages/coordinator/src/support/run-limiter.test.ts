import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RunLimiter, Semaphore } from './run-limiter.js';

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

describe('RunLimiter', () => {
  it('limits each run on its own and forgets a run once it is idle', async () => {
    const limiter = new RunLimiter(1);
    const a = await limiter.acquire('a');
    const b = await limiter.acquire('b');
    let second = false;
    const next = limiter.acquire('a').then((release) => {
      second = true;
      return release;
    });
    await tick();
    expect(second).toBe(false);
    a();
    (await next)();
    b();
    expect((limiter as unknown as { runs: Map<string, unknown> }).runs.size).toBe(0);
  });
});

describe('RunLimiter serial lane', () => {
  it('grants one serial place of a run at a time, in order, and forgets the run once idle', async () => {
    const limiter = new RunLimiter(5);
    const order: string[] = [];
    const first = await limiter.acquire('a', undefined, 'serial');
    const waiting = ['second', 'third'].map((name) =>
      limiter.acquire('a', undefined, 'serial').then((release) => {
        order.push(name);
        return release;
      }),
    );
    const concurrent = await limiter.acquire('a');
    const otherRun = await limiter.acquire('b', undefined, 'serial');
    await tick();
    expect(order).toEqual([]);
    first();
    (await waiting[0])?.();
    (await waiting[1])?.();
    expect(order).toEqual(['second', 'third']);
    concurrent();
    otherRun();
    expect((limiter as unknown as { runs: Map<string, unknown> }).runs.size).toBe(0);
  });

  it('holds none of the run’s places while a serial call waits for the lane', async () => {
    const limiter = new RunLimiter(2);
    const serial = await limiter.acquire('a', undefined, 'serial');
    let nextGranted = false;
    const next = limiter.acquire('a', undefined, 'serial').then((release) => {
      nextGranted = true;
      return release;
    });
    await tick();
    // The run's second place is free for a concurrent call while the second serial call waits.
    const concurrent = await limiter.acquire('a');
    expect(nextGranted).toBe(false);
    concurrent();
    serial();
    (await next)();
    expect((limiter as unknown as { runs: Map<string, unknown> }).runs.size).toBe(0);
  });

  it('gives back the lane of a serial call whose run was cancelled while it waited for a place', async () => {
    const limiter = new RunLimiter(1);
    const run = new AbortController();
    const busy = await limiter.acquire('a');
    const serial = limiter.acquire('a', run.signal, 'serial');
    await tick();
    run.abort(new Error('run cancelled'));
    await expect(serial).rejects.toThrow('run cancelled');
    busy();
    const again = await limiter.acquire('a', undefined, 'serial');
    again();
    expect((limiter as unknown as { runs: Map<string, unknown> }).runs.size).toBe(0);
  });
});

describe('RunLimiter.tryAcquire', () => {
  const runsOf = (limiter: RunLimiter) => (limiter as unknown as { runs: Map<string, unknown> }).runs;

  it('takes free places at once and refuses, without queueing, when the run is full', async () => {
    const limiter = new RunLimiter(2);
    const a = limiter.tryAcquire('a');
    const b = limiter.tryAcquire('a');
    expect(a).toBeTypeOf('function');
    expect(b).toBeTypeOf('function');
    expect(limiter.tryAcquire('a')).toBeUndefined();
    expect(limiter.tryAcquire('other')).toBeTypeOf('function');
    a?.();
    const c = limiter.tryAcquire('a');
    expect(c).toBeTypeOf('function');
    b?.();
    c?.();
    runsOf(limiter).delete('other');
    expect(runsOf(limiter).size).toBe(0);
  });

  it('refuses a serial call while the lane is held, but not a concurrent one', async () => {
    const limiter = new RunLimiter(5);
    const serial = limiter.tryAcquire('a', 'serial');
    expect(serial).toBeTypeOf('function');
    expect(limiter.tryAcquire('a', 'serial')).toBeUndefined();
    const concurrent = limiter.tryAcquire('a');
    expect(concurrent).toBeTypeOf('function');
    serial?.();
    const next = limiter.tryAcquire('a', 'serial');
    expect(next).toBeTypeOf('function');
    next?.();
    concurrent?.();
    expect(runsOf(limiter).size).toBe(0);
  });

  it('never jumps ahead of a call waiting in acquire: a freed place goes to the waiter', async () => {
    const limiter = new RunLimiter(1);
    const first = limiter.tryAcquire('a') as () => void;
    let granted = false;
    const waiting = limiter.acquire('a').then((release) => {
      granted = true;
      return release;
    });
    first();
    expect(limiter.tryAcquire('a')).toBeUndefined();
    (await waiting)();
    expect(granted).toBe(true);
    expect(runsOf(limiter).size).toBe(0);
  });
});
