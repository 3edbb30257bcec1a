import { describe, expect, it } from 'vitest';
import { parseForgetKeyReply } from './forgetKey-1.lua.js';

describe('parseForgetKeyReply', () => {
  it('reads 1 as dropped and 0 as left alone', () => {
    expect(parseForgetKeyReply(1)).toBe(true);
    expect(parseForgetKeyReply(0)).toBe(false);
  });

  it.each([2, -1, '0', null, [0]])('throws naming the script for %j', (reply) => {
    expect(() => parseForgetKeyReply(reply)).toThrow(/^forgetKey script: expected 1 or 0, got /);
  });
});
