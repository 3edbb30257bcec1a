import { describe, expect, it } from 'vitest';
import { parseDropDedupeReply } from './dropDedupe-2.lua.js';

describe('parseDropDedupeReply', () => {
  it.each([0, 1, 42])('reads %i as the number of entries removed', (count) => {
    expect(parseDropDedupeReply(count)).toBe(count);
  });

  it.each([-1, 1.5, '3', null, [3]])('throws naming the script for %j', (reply) => {
    expect(() => parseDropDedupeReply(reply)).toThrow(/^dropDedupe script: expected a count .*, got /);
  });
});
