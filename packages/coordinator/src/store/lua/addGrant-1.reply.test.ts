import { describe, expect, it } from 'vitest';
import { parseAddGrantReply } from './addGrant-1.lua.js';

describe('parseAddGrantReply', () => {
  it('reads 1 as kept and 0 as full', () => {
    expect(parseAddGrantReply(1)).toBe(true);
    expect(parseAddGrantReply(0)).toBe(false);
  });
  it.each([2, '1', null])('throws naming the script for %j', (reply) => {
    expect(() => parseAddGrantReply(reply)).toThrow(/^addGrant script: expected/);
  });
});
