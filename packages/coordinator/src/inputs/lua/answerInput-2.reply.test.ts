import { describe, expect, it } from 'vitest';
import { parseAnswerInputReply } from './answerInput-2.lua.js';

describe('parseAnswerInputReply', () => {
  it('reads 1 as answered and 0 as nothing parked under the id', () => {
    expect(parseAnswerInputReply(1)).toBe(true);
    expect(parseAnswerInputReply(0)).toBe(false);
  });

  it.each([2, '1', null, [1]])('throws naming the script for %j', (reply) => {
    expect(() => parseAnswerInputReply(reply)).toThrow(/^answerInput script: expected 1 or 0, got /);
  });
});
