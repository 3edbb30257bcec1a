import { describe, expect, it } from 'vitest';
import { parseSettleConfirmReply } from './settleConfirm-2.lua.js';

describe('parseSettleConfirmReply', () => {
  it('reads the decision that holds for each confirmation, in order', () => {
    const reply = ['{"approve":true,"by":"person"}', '{"approve":false,"by":"timeout"}'];
    expect(parseSettleConfirmReply(reply)).toEqual(reply);
  });

  it('reads an empty list when no confirmations were given', () => {
    expect(parseSettleConfirmReply([])).toEqual([]);
  });

  it.each([
    ['not a list', '{}'],
    ['nil', null],
    ['a nil decision', ['{}', null]],
    ['a number', [1]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseSettleConfirmReply(reply)).toThrow(/^settleConfirm script: expected a list .*, got /);
  });
});
