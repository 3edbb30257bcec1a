import { describe, expect, it } from 'vitest';
import { parseAddSessionMembersReply } from './addSessionMembers-1.lua.js';

describe('parseAddSessionMembersReply', () => {
  it.each([0, 2])('reads %i as the number of names added', (count) => {
    expect(parseAddSessionMembersReply(count)).toBe(count);
  });

  it.each([-1, 0.5, '2', null, false])('throws naming the script for %j', (reply) => {
    expect(() => parseAddSessionMembersReply(reply)).toThrow(/^addSessionMembers script: expected a count .*, got /);
  });
});
