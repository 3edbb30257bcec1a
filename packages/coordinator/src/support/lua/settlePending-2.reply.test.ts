import { describe, expect, it } from 'vitest';
import { parseSettlePendingReply } from './settlePending-2.lua.js';

describe('parseSettlePendingReply', () => {
  it('reads the outcome that holds for each id, in order', () => {
    const reply = ['{"approve":true,"by":"person"}', '{"approve":false,"by":"timeout"}'];
    expect(parseSettlePendingReply(reply)).toEqual(reply);
  });

  it('reads an empty list when no ids were given', () => {
    expect(parseSettlePendingReply([])).toEqual([]);
  });

  it.each([
    ['not a list', '{}'],
    ['nil', null],
    ['a nil outcome', ['{}', null]],
    ['a number', [1]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseSettlePendingReply(reply)).toThrow(/^settlePending script: expected a list .*, got /);
  });
});
