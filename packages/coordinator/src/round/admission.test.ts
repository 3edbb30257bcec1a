import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RequestError } from '../request-error.js';
import { RoundAdmission } from './admission.js';

describe('RoundAdmission', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('admits up to its limit at once, then each waiting round in arrival order as one ends', async () => {
    const waiting: number[] = [];
    const a = new RoundAdmission({ maxInFlight: 2, queueMs: 1_000, onWaiting: (n) => waiting.push(n) });
    const first = await a.admit();
    await a.admit();
    const order: string[] = [];
    const third = a.admit().then((release) => {
      order.push('third');
      return release;
    });
    const fourth = a.admit().then((release) => {
      order.push('fourth');
      return release;
    });
    expect(a.size).toEqual({ inFlight: 2, waiting: 2 });
    first();
    first(); // a second release of the same round changes nothing
    (await third)();
    (await fourth)();
    expect(order).toEqual(['third', 'fourth']);
    expect(a.size).toEqual({ inFlight: 1, waiting: 0 });
    expect(waiting).toEqual([1, 2, 1, 0]);
  });

  it('refuses a round that waited queueMs with overloaded, naming both limits, and forgets it', async () => {
    const a = new RoundAdmission({ maxInFlight: 1, queueMs: 500 });
    const release = await a.admit();
    const late = a.admit();
    vi.advanceTimersByTime(499);
    expect(a.size.waiting).toBe(1);
    vi.advanceTimersByTime(1);
    const error = await late.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).code).toBe('overloaded');
    expect((error as RequestError).message).toMatch(/TD_MAX_ROUNDS_IN_FLIGHT.*500 ms \(TD_ROUND_QUEUE_MS\)/);
    expect(a.size).toEqual({ inFlight: 1, waiting: 0 });
    release();
    expect(a.size.inFlight).toBe(0);
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new RoundAdmission({ maxInFlight: 0, queueMs: 1 })).toThrow(/maxInFlight/);
    expect(() => new RoundAdmission({ maxInFlight: 1, queueMs: 1.5 })).toThrow(/queueMs/);
  });
});
