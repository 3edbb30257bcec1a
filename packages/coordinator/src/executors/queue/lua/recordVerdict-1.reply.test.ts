import { describe, expect, it } from 'vitest';
import { parseRecordVerdictReply } from './recordVerdict-1.lua.js';

describe('parseRecordVerdictReply', () => {
  it('reads the outcome JSON that stands', () => {
    expect(parseRecordVerdictReply('{"status":"ok"}')).toBe('{"status":"ok"}');
  });

  it.each([0, '', null, ['x']])('throws naming the script for %j', (reply) => {
    expect(() => parseRecordVerdictReply(reply)).toThrow(/^recordVerdict script: expected the outcome JSON/);
  });
});
