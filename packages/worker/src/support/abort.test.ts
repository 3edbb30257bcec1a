import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { abortError, type DeadlineSignal, isDeadlineAbort, withDeadline } from './abort.js';

const stoppedOf = (stop: DeadlineSignal) => new Promise<'aborted'>((resolve) => stop.onStop(() => resolve('aborted')));

describe('withDeadline', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts with a TimeoutError when the deadline passes, which reads as timeout', async () => {
    const stop = withDeadline(new AbortController().signal, 100);
    vi.advanceTimersByTime(99);
    expect(stop.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(stop.signal.aborted).toBe(true);
    expect(isDeadlineAbort(stop.signal)).toBe(true);
    expect(abortError(stop.signal).code).toBe('timeout');
    await expect(stoppedOf(stop)).resolves.toBe('aborted');
  });

  it("aborts with the caller's reason when the caller aborts, which reads as cancelled", async () => {
    const caller = new AbortController();
    const stop = withDeadline(caller.signal, 100);
    const reason = new Error('cancelled by the coordinator');
    caller.abort(reason);
    expect(stop.signal.reason).toBe(reason);
    expect(abortError(stop.signal).code).toBe('cancelled');
    await expect(stoppedOf(stop)).resolves.toBe('aborted');
  });

  it('is aborted at once when the caller already was', () => {
    const stop = withDeadline(AbortSignal.abort(), 100);
    expect(stop.signal.aborted).toBe(true);
    expect(isDeadlineAbort(stop.signal)).toBe(false);
  });

  it('neither times out nor follows the caller once disposed', () => {
    const caller = new AbortController();
    const stop = withDeadline(caller.signal, 100);
    stop.dispose();
    caller.abort();
    vi.advanceTimersByTime(1_000);
    expect(stop.signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('makes its signal only when read, and a signal first read after the stop is already aborted with its reason', async () => {
    const timedOut = withDeadline(new AbortController().signal, 100);
    vi.advanceTimersByTime(100);
    expect(timedOut.aborted).toBe(true);
    await expect(stoppedOf(timedOut)).resolves.toBe('aborted');
    expect(timedOut.signal.aborted).toBe(true);
    expect(isDeadlineAbort(timedOut.signal)).toBe(true);

    const caller = new AbortController();
    const cancelled = withDeadline(caller.signal, 100);
    expect(cancelled.aborted).toBe(false);
    const reason = new Error('run cancelled');
    caller.abort(reason);
    expect(cancelled.aborted).toBe(true);
    expect(cancelled.signal.reason).toBe(reason);
    expect(cancelled.signal).toBe(cancelled.signal);
  });

  it("fires a listener added to the signal before the stop, once, with the deadline's reason", () => {
    const stop = withDeadline(new AbortController().signal, 100);
    const heard: unknown[] = [];
    stop.signal.addEventListener('abort', () => heard.push(stop.signal.reason));
    vi.advanceTimersByTime(100);
    vi.advanceTimersByTime(100);
    expect(heard).toHaveLength(1);
    expect((heard[0] as Error).name).toBe('TimeoutError');
  });
});

describe('withDeadline hold', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops the clock while held and keeps the time left, not a fresh deadline', () => {
    for (const own of [undefined, new AbortController()]) {
      const stop = own ? withDeadline(own.signal, 100, own) : withDeadline(new AbortController().signal, 100);
      vi.advanceTimersByTime(60);
      const release = stop.hold();
      vi.advanceTimersByTime(10_000);
      expect(stop.signal.aborted).toBe(false);
      release();
      vi.advanceTimersByTime(39);
      expect(stop.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(isDeadlineAbort(stop.signal)).toBe(true);
      stop.dispose();
    }
  });

  it('nests holds: the clock runs again only when the last one is released', () => {
    const stop = withDeadline(new AbortController().signal, 50);
    const a = stop.hold();
    const b = stop.hold();
    a();
    a();
    vi.advanceTimersByTime(1_000);
    expect(stop.signal.aborted).toBe(false);
    b();
    vi.advanceTimersByTime(50);
    expect(stop.signal.aborted).toBe(true);
  });

  it('a caller abort still stops a held call at once', () => {
    const caller = new AbortController();
    const stop = withDeadline(caller.signal, 50);
    stop.hold();
    caller.abort(new Error('cancelled'));
    expect(stop.signal.aborted).toBe(true);
    expect(isDeadlineAbort(stop.signal)).toBe(false);
  });
});

describe('withDeadline on a shared signal', () => {
  it("lets many deadlines follow one caller's signal without a listener each", () => {
    const caller = new AbortController();
    const stops = Array.from({ length: 20 }, () => withDeadline(caller.signal, 1_000));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    caller.abort(new Error('run cancelled'));
    expect(stops.every((s) => s.aborted)).toBe(true);
    for (const s of stops) s.dispose();
  });
});
