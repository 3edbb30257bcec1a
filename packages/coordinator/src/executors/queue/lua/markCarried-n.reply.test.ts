import { describe, expect, it } from 'vitest';
import { parseMarkCarriedReply } from './markCarried-n.lua.js';

describe('parseMarkCarriedReply', () => {
  it('reads the count of calls marked', () => {
    expect(parseMarkCarriedReply(0)).toBe(0);
    expect(parseMarkCarriedReply(5)).toBe(5);
  });

  it.each([
    ['nil', null],
    ['a list', [1]],
    ['a negative count', -1],
    ['a fraction', 0.5],
    ['a string', '1'],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseMarkCarriedReply(reply)).toThrow(/^markCarried script: expected a count of marked calls, got /);
  });
});
