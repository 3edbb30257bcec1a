import { describe, expect, it } from 'vitest';
import { parseStartCallsReply } from './startCalls-n2n.lua.js';

describe('parseStartCallsReply', () => {
  it("reads each call's tag: run, again, cancelled, or elsewhere with the job whose mark it holds", () => {
    expect(parseStartCallsReply(['run', 'again', 'cancelled', 'elsewhere rnd_1-0.1'])).toEqual([
      'run',
      'again',
      'cancelled',
      { elsewhere: 'rnd_1-0.1' },
    ]);
  });

  it('reads any other string as the outcome recorded before, undecoded', () => {
    expect(parseStartCallsReply(['{"status":"ok"}', 'run'])).toEqual([{ recorded: '{"status":"ok"}' }, 'run']);
  });

  it('reads an empty list when no calls were given', () => {
    expect(parseStartCallsReply([])).toEqual([]);
  });

  it.each([
    ['a bare tag', 'run'],
    ['nil', null],
    ['a nil in the list', ['run', null]],
    ['a number', [1]],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseStartCallsReply(reply)).toThrow(/^startCalls script: expected a list .*, got /);
  });
});
