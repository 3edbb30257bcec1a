import { describe, expect, it } from 'vitest';
import { parseReportOutcomesReply } from './reportOutcomes-1n.lua.js';

describe('parseReportOutcomesReply', () => {
  it('reads 1 as recorded and sent now and 0 as an outcome or another job standing, per fresh call', () => {
    expect(parseReportOutcomesReply([0, 1])).toEqual([false, true]);
  });

  it('reads an empty list when every call was only sent again', () => {
    expect(parseReportOutcomesReply([])).toEqual([]);
  });

  it.each([
    ['a bare 0', 0],
    ['nil', null],
    ['a -1', [-1]],
    ['a string', ['0']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseReportOutcomesReply(reply)).toThrow(/^reportOutcomes script: expected a list of 1 or 0/);
  });
});
