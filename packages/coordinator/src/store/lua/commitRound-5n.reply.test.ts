import { describe, expect, it } from 'vitest';
import { parseCommitRoundReply } from './commitRound-5n.lua.js';

describe('parseCommitRoundReply', () => {
  it('reads "ok" as committed', () => {
    expect(parseCommitRoundReply('ok')).toBe('ok');
  });

  it('reads "fenced" as nothing written', () => {
    expect(parseCommitRoundReply('fenced')).toBe('fenced');
  });

  it.each(['OK', 1, null, ['ok']])('throws naming the script for %j', (reply) => {
    expect(() => parseCommitRoundReply(reply)).toThrow(/^commitRound script: expected "ok" or "fenced", got /);
  });
});
