import { describe, expect, it } from 'vitest';
import { shareOf } from './consumers.js';

describe('shareOf: a class’s job limit split over the queue shards a worker consumes', () => {
  it.each([
    [16, 1, [16]],
    [16, 3, [6, 5, 5]],
    [8, 3, [3, 3, 2]],
    [8, 8, [1, 1, 1, 1, 1, 1, 1, 1]],
  ])('splits %i over %i shards as %j (the whole limit, no more)', (limit, shards, expected) => {
    const shares = Array.from({ length: shards }, (_, i) => shareOf(limit, i, shards));
    expect(shares).toEqual(expected);
    expect(shares.reduce((a, b) => a + b, 0)).toBe(limit);
  });

  it('gives every shard at least one job when the limit is below the shards (the slots still cap calls)', () => {
    expect(Array.from({ length: 4 }, (_, i) => shareOf(2, i, 4))).toEqual([1, 1, 1, 1]);
  });
});
