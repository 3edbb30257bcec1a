import { describe, expect, it } from 'vitest';
import { parseRetainRoundReply } from './retainRound-1.lua.js';

describe('parseRetainRoundReply', () => {
  it('reads 1 as retained and 0 as left alone', () => {
    expect(parseRetainRoundReply(1)).toBe(true);
    expect(parseRetainRoundReply(0)).toBe(false);
  });

  it.each([2, -1, '0', null, [0]])('throws naming the script for %j', (reply) => {
    expect(() => parseRetainRoundReply(reply)).toThrow(/^retainRound script: expected 1 or 0, got /);
  });
});
