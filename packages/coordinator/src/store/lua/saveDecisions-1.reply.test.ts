import { describe, expect, it } from 'vitest';
import { parseSaveDecisionsReply } from './saveDecisions-1.lua.js';

describe('parseSaveDecisionsReply', () => {
  it('reads 1 as stored', () => {
    expect(parseSaveDecisionsReply(1)).toBe(true);
  });

  it('reads 0 as not stored (the round is done, gone or owned by another coordinator)', () => {
    expect(parseSaveDecisionsReply(0)).toBe(false);
  });

  it.each([2, -1, '1', null, [1]])('throws naming the script for %j', (reply) => {
    expect(() => parseSaveDecisionsReply(reply)).toThrow(/^saveDecisions script: expected 1 or 0, got /);
  });
});
