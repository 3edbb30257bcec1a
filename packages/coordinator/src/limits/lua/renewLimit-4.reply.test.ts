import { describe, expect, it } from 'vitest';
import { parseRenewLimitReply } from './renewLimit-4.lua.js';

describe('parseRenewLimitReply', () => {
  it('reads the tickets lost', () => {
    expect(parseRenewLimitReply([])).toEqual([]);
    expect(parseRenewLimitReply(['c1:0', 'c1:4'])).toEqual(['c1:0', 'c1:4']);
  });

  it.each([
    ['nil', null],
    ['a number', [1]],
    ['a bare string', 'c1:0'],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseRenewLimitReply(reply)).toThrow(/^renewLimit script: expected .*, got /);
  });
});
