import { describe, expect, it } from 'vitest';
import { RunningCalls } from './running-calls.js';

describe('RunningCalls', () => {
  it('aborts the call a cancel names, and no other', () => {
    const running = new RunningCalls();
    const [a, b] = [new AbortController(), new AbortController()];
    running.add('r-0', a);
    running.add('r-1', b);
    running.abort('r-0', new Error('cancelled'));
    expect(a.signal.aborted).toBe(true);
    expect(b.signal.aborted).toBe(false);
  });

  describe('when two jobs hold the same call id', () => {
    it('aborts both, and still reaches the one left after the other ended', () => {
      const running = new RunningCalls();
      const [original, takeover] = [new AbortController(), new AbortController()];
      running.add('r-1', original);
      running.add('r-1', takeover);
      running.remove('r-1', takeover);
      running.abort('r-1', new Error('cancelled'));
      expect(original.signal.aborted).toBe(true);
      expect(takeover.signal.aborted).toBe(false);
      running.add('r-2', original);
      running.add('r-2', takeover);
      running.abort('r-2', new Error('cancelled'));
      expect(takeover.signal.aborted).toBe(true);
    });
  });

  it('forgets a call once its last holder removed it', () => {
    const running = new RunningCalls();
    const stop = new AbortController();
    running.add('r-0', stop);
    running.remove('r-0', stop);
    running.remove('r-0', stop);
    running.abort('r-0', new Error('cancelled'));
    expect(stop.signal.aborted).toBe(false);
  });
});
