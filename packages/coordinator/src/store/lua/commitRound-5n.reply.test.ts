import { describe, expect, it } from 'vitest';
import { parseCommitRoundReply } from './commitRound-5n.lua.js';

describe('parseCommitRoundReply', () => {
  it('reads "ok" as committed', () => {
    expect(parseCommitRoundReply('ok')).toBe('ok');
  });

  it('reads "ok waiters" as committed, its places given back where calls wait', () => {
    expect(parseCommitRoundReply('ok waiters')).toBe('ok waiters');
  });

  it('reads "fenced" as nothing written', () => {
    expect(parseCommitRoundReply('fenced')).toBe('fenced');
  });

  it.each(['OK', 'ok  waiters', 1, null, ['ok']])('throws naming the script for %j', (reply) => {
    expect(() => parseCommitRoundReply(reply)).toThrow(
      /^commitRound script: expected "ok", "ok waiters" or "fenced", got /,
    );
  });
});
