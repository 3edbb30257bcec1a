import { describe, expect, it } from 'vitest';
import { parseUseGrantReply } from './useGrant-1.lua.js';

describe('parseUseGrantReply', () => {
  it('reads a grant’s JSON, and nil as none', () => {
    expect(parseUseGrantReply('{"grantId":"g"}')).toBe('{"grantId":"g"}');
    expect(parseUseGrantReply(null)).toBeNull();
  });
  it.each([1, 'x', []])('throws naming the script for %j', (reply) => {
    expect(() => parseUseGrantReply(reply)).toThrow(/^useGrant script: expected/);
  });
});
