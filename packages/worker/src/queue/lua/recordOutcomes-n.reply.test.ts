import { describe, expect, it } from 'vitest';
import { parseRecordOutcomesReply } from './recordOutcomes-n.lua.js';

describe('parseRecordOutcomesReply', () => {
  it('reads 1 as recorded now and 0 as an outcome or another job standing, per call', () => {
    expect(parseRecordOutcomesReply([1, 0, 1])).toEqual([true, false, true]);
  });

  it.each([
    ['a bare 1', 1],
    ['nil', null],
    ['a 2', [1, 2]],
    ['a string', ['1']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseRecordOutcomesReply(reply)).toThrow(/^recordOutcomes script: expected a list of 1 or 0/);
  });
});
