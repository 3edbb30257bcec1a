import { describe, expect, it } from 'vitest';
import { parseAnswerConfirmReply } from './answerConfirm-2.lua.js';

describe('parseAnswerConfirmReply', () => {
  it('reads an answered confirmation with the JSON of the entry claimed', () => {
    expect(parseAnswerConfirmReply(['answered', '{"confirmationId":"cf_1"}'])).toEqual({
      status: 'answered',
      confirmation: '{"confirmationId":"cf_1"}',
    });
  });

  it('reads {"not_found"}', () => {
    expect(parseAnswerConfirmReply(['not_found'])).toEqual({ status: 'not_found' });
  });

  it('reads {"ambiguous", <count>} with the number of confirmations of that callId', () => {
    expect(parseAnswerConfirmReply(['ambiguous', 3])).toEqual({ status: 'ambiguous', count: 3 });
  });

  it.each([
    ['a bare tag', 'not_found'],
    ['nil', null],
    ['an unknown tag', ['claimed', '{}']],
    ['answered without the entry', ['answered']],
    ['answered with a number', ['answered', 1]],
    ['ambiguous with a count as a string', ['ambiguous', '3']],
    ['ambiguous with a count under 2', ['ambiguous', 1]],
    ['not_found with more', ['not_found', 'x']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseAnswerConfirmReply(reply)).toThrow(/^answerConfirm script: expected .*, got /);
  });
});
