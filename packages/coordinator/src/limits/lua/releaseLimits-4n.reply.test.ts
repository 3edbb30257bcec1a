import { describe, expect, it } from 'vitest';
import { parseReleaseLimitsReply } from './releaseLimits-4n.lua.js';

describe('parseReleaseLimitsReply', () => {
  it('reads the stages to wake', () => {
    expect(parseReleaseLimitsReply([], 2)).toEqual([]);
    expect(parseReleaseLimitsReply([1, 2], 2)).toEqual([1, 2]);
  });

  it.each([
    ['nil', null],
    ['a stage past the last', [3]],
    ['stage 0', [0]],
    ['a string', ['1']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseReleaseLimitsReply(reply, 2)).toThrow(/^releaseLimits script: expected .*, got /);
  });
});
