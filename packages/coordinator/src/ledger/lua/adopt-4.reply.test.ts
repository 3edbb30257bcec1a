import { describe, expect, it } from 'vitest';
import { parseAdoptReply } from './adopt-4.lua.js';

describe('parseAdoptReply', () => {
  it("reads the lapsed coordinator's round members", () => {
    expect(parseAdoptReply(['s1|r1|rnd_1', 's1|r1|rnd_2'])).toEqual(['s1|r1|rnd_1', 's1|r1|rnd_2']);
  });

  it('reads an empty list as adopted with no rounds', () => {
    expect(parseAdoptReply([])).toEqual([]);
  });

  it('reads nil (Lua false) as not lapsed', () => {
    expect(parseAdoptReply(null)).toBeNull();
  });

  it.each([
    ['false', false],
    ['a member', 's1|r1|rnd_1'],
    ['a number in the list', ['s1|r1|rnd_1', 2]],
    ['a count', 0],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseAdoptReply(reply)).toThrow(/^adopt script: expected a list of round members, or nil, got /);
  });
});
