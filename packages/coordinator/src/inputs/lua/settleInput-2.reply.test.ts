import { describe, expect, it } from 'vitest';
import { parseSettleInputReply } from './settleInput-2.lua.js';

describe('parseSettleInputReply', () => {
  it('reads the settlement that holds for each parked call, in order', () => {
    const reply = ['{"by":"timeout"}', '{"by":"answer","answer":{"output":1}}'];
    expect(parseSettleInputReply(reply)).toEqual(reply);
  });

  it('reads an empty list when no inputs were given', () => {
    expect(parseSettleInputReply([])).toEqual([]);
  });

  it.each([
    ['not a list', '{}'],
    ['nil', null],
    ['a nil settlement', ['{}', null]],
    ['a number', [1]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseSettleInputReply(reply)).toThrow(/^settleInput script: expected a list .*, got /);
  });
});
