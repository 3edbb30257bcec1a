import { describe, expect, it } from 'vitest';
import { parseBeginRoundReply } from './beginRound-5.lua.js';

describe('parseBeginRoundReply', () => {
  it("reads a new round: the session's fields and the dedupe entries found", () => {
    expect(parseBeginRoundReply(['new', ['state', '{}', 'seq', '0'], ['{"key":"k"}', null]])).toEqual({
      status: 'new',
      session: ['state', '{}', 'seq', '0'],
      dedupe: ['{"key":"k"}', null],
    });
  });

  it('reads a new round with no dedupe keys asked for', () => {
    expect(parseBeginRoundReply(['new', ['state', '{}'], []])).toEqual({
      status: 'new',
      session: ['state', '{}'],
      dedupe: [],
    });
  });

  it.each(['existing', 'conflict'])('reads {"%s", <round id>} with the round holding the key', (status) => {
    expect(parseBeginRoundReply([status, 'rnd_1'])).toEqual({ status, round: 'rnd_1' });
  });

  it('reads {"no_session"}', () => {
    expect(parseBeginRoundReply(['no_session'])).toEqual({ status: 'no_session' });
  });

  it.each([
    ['a bare tag', 'no_session'],
    ['nil', null],
    ['an unknown tag', ['started', 'rnd_1']],
    ['existing without the round', ['existing']],
    ['conflict with a number', ['conflict', 7]],
    ['new without its lists', ['new']],
    ['new with an empty session', ['new', [], []]],
    ['new with an odd field list', ['new', ['state'], []]],
    ['new with a number in the dedupe entries', ['new', ['state', '{}'], [1]]],
    ['no_session with more', ['no_session', 'x']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseBeginRoundReply(reply)).toThrow(/^beginRound script: expected .*, got /);
  });
});
