import { describe, expect, it } from 'vitest';
import { parseTakeRoundReply } from './takeRound-1.lua.js';

describe('parseTakeRoundReply', () => {
  it('reads a taken round: its calls, planned decisions and origin', () => {
    expect(parseTakeRoundReply(['taken', '[{"id":"c1"}]', '[]', 'c-1'])).toEqual({
      status: 'taken',
      calls: '[{"id":"c1"}]',
      planned: '[]',
      origin: 'c-1',
    });
  });

  it('reads a round with no planned decisions (nil) as planned null', () => {
    expect(parseTakeRoundReply(['taken', '[]', null, ''])).toEqual({
      status: 'taken',
      calls: '[]',
      planned: null,
      origin: '',
    });
  });

  it.each(['done', 'missing'])('reads {"%s"}', (status) => {
    expect(parseTakeRoundReply([status])).toEqual({ status });
  });

  it.each([
    ['a bare tag', 'done'],
    ['nil', null],
    ['an unknown tag', ['gone']],
    ['taken without its fields', ['taken']],
    ['taken with calls not a string', ['taken', 1, null, 'c-1']],
    ['taken with planned false', ['taken', '[]', false, 'c-1']],
    ['taken without origin', ['taken', '[]', null]],
    ['done with more', ['done', 'x']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseTakeRoundReply(reply)).toThrow(/^takeRound script: expected .*, got /);
  });
});
