import { describe, expect, it } from 'vitest';
import { DuePerKey } from './periodic.js';

describe('DuePerKey', () => {
  it('is due at first, then not again within its period, per key', () => {
    const d = new DuePerKey(1_000);
    expect(d.due('a', 10_000)).toBe(true);
    d.done('a', 10_000);
    expect(d.due('a', 10_999)).toBe(false);
    expect(d.due('b', 10_999)).toBe(true);
    expect(d.due('a', 11_000)).toBe(true);
  });

  it('forgets everything past its bound, which only makes keys due again', () => {
    const d = new DuePerKey(1_000, 2);
    d.done('a', 10_000);
    d.done('b', 10_000);
    d.done('c', 10_000);
    expect(d.due('a', 10_001)).toBe(true);
    expect(d.due('c', 10_001)).toBe(false);
  });
});
