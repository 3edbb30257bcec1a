import { describe, expect, it } from 'vitest';
import { parsePeekLimitReply } from './peekLimit-2.lua.js';

describe('parsePeekLimitReply', () => {
  it('reads the places held and the ms until the next token', () => {
    expect(parsePeekLimitReply([2, 0])).toEqual({ held: 2, nextTokenMs: 0 });
    expect(parsePeekLimitReply([0, 417])).toEqual({ held: 0, nextTokenMs: 417 });
  });

  it.each([
    ['nil', null],
    ['one number', [1]],
    ['a negative count', [-1, 0]],
    ['a string', ['1', 0]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parsePeekLimitReply(reply)).toThrow(/^peekLimit script: expected .*, got /);
  });
});
