import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { abortListenersLeft, onAbort, raceAbort } from './abort-listeners.js';

describe('onAbort', () => {
  it('calls each listener once when the signal aborts, and not one taken off before', () => {
    const caller = new AbortController();
    const heard: string[] = [];
    onAbort(caller.signal, () => heard.push('a'));
    const off = onAbort(caller.signal, () => heard.push('b'));
    onAbort(caller.signal, () => heard.push('c'));
    off();
    caller.abort();
    caller.abort();
    expect(heard).toEqual(['a', 'c']);
  });

  it('puts one listener on the signal however many listen', () => {
    const caller = new AbortController();
    const offs = Array.from({ length: 50 }, () => onAbort(caller.signal, () => undefined));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    for (const off of offs) off();
  });
});

describe('abortListenersLeft', () => {
  it("counts onAbort's listeners and the signal's own, not the one onAbort shares", () => {
    const c = new AbortController();
    expect(abortListenersLeft(c.signal)).toBe(0);
    const off = onAbort(c.signal, () => undefined);
    expect(abortListenersLeft(c.signal)).toBe(1);
    off();
    expect(abortListenersLeft(c.signal)).toBe(0);
    const own = () => undefined;
    c.signal.addEventListener('abort', own);
    expect(abortListenersLeft(c.signal)).toBe(1);
    c.signal.removeEventListener('abort', own);
    expect(abortListenersLeft(c.signal)).toBe(0);
  });
});

describe('raceAbort', () => {
  it("gives the promise's outcome and takes its listener off when the promise settles first", async () => {
    const caller = new AbortController();
    await expect(raceAbort(Promise.resolve(1), caller.signal, () => 'aborted')).resolves.toBe(1);
    await expect(raceAbort(Promise.reject(new Error('no')), caller.signal, () => 'aborted')).rejects.toThrow('no');
    expect(abortListenersLeft(caller.signal)).toBe(0);
    caller.abort();
  });

  it('gives what `aborted` returns, or rejects with what it throws, once the signal aborts', async () => {
    const forever = new Promise<number>(() => {});
    const caller = new AbortController();
    const value = raceAbort(forever, caller.signal, () => 'aborted');
    const thrown = raceAbort(forever, caller.signal, () => {
      throw new Error('stopped');
    });
    caller.abort();
    await expect(value).resolves.toBe('aborted');
    await expect(thrown).rejects.toThrow('stopped');
  });

  it('answers at once for a signal that has already aborted', async () => {
    const forever = new Promise<number>(() => {});
    await expect(raceAbort(forever, AbortSignal.abort(), () => 'aborted')).resolves.toBe('aborted');
  });
});
