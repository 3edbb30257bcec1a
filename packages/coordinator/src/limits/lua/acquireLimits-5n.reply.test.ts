import { describe, expect, it } from 'vitest';
import { parseAcquireLimitsReply } from './acquireLimits-5n.lua.js';

describe('parseAcquireLimitsReply', () => {
  it('reads {granted, due} per ticket', () => {
    expect(parseAcquireLimitsReply([2, 0], 2, 1)).toEqual([{ granted: 2, due: 0 }]);
    expect(parseAcquireLimitsReply([0, 350, 1, 20], 2, 2)).toEqual([
      { granted: 0, due: 350 },
      { granted: 1, due: 20 },
    ]);
  });

  it.each([
    ['nil', null],
    ['more stages granted than asked', [3, 0]],
    ['a negative count', [-1, 0]],
    ['a string count', ['1', 0]],
    ['a missing due', [1]],
    ['a negative due', [0, -5]],
    ['a reply for another number of tickets', [1, 0, 1, 0]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseAcquireLimitsReply(reply, 2, 1)).toThrow(/^acquireLimits script: expected .*, got /);
  });
});
