import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { abortListenersLeft, onAbort } from './abort-listeners.js';

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
