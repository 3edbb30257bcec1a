import { describe, expect, it } from 'vitest';
import { parseFailRoundReply } from './failRound-1.lua.js';

describe('parseFailRoundReply', () => {
  it('reads 1 as marked failed', () => {
    expect(parseFailRoundReply(1)).toBe(true);
  });

  it('reads 0 as left alone (the round is done, gone or owned by another coordinator)', () => {
    expect(parseFailRoundReply(0)).toBe(false);
  });

  it.each([2, -1, '0', null, [0]])('throws naming the script for %j', (reply) => {
    expect(() => parseFailRoundReply(reply)).toThrow(/^failRound script: expected 1 or 0, got /);
  });
});
