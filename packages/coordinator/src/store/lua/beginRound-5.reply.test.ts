import { describe, expect, it } from 'vitest';
import { parseBeginRoundReply } from './beginRound-5.lua.js';

describe('parseBeginRoundReply', () => {
  it("reads a new round: the session's fields and the dedupe entries found", () => {
    expect(parseBeginRoundReply(['new', ['state', '{}', 'seq', '0'], ['{"key":"k"}', null], 0])).toEqual({
      status: 'new',
      session: ['state', '{}', 'seq', '0'],
      dedupe: ['{"key":"k"}', null],
      placesTaken: false,
    });
  });

  it('reads a new round with no dedupe keys asked for, its places taken', () => {
    expect(parseBeginRoundReply(['new', ['state', '{}'], [], 1])).toEqual({
      status: 'new',
      session: ['state', '{}'],
      dedupe: [],
      placesTaken: true,
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
    ['new without whether its places were taken', ['new', ['state', '{}'], []]],
    ['new with places taken as a string', ['new', ['state', '{}'], [], '1']],
    ['new with an empty session', ['new', [], [], 0]],
    ['new with an odd field list', ['new', ['state'], [], 0]],
    ['new with a number in the dedupe entries', ['new', ['state', '{}'], [1], 0]],
    ['no_session with more', ['no_session', 'x']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseBeginRoundReply(reply)).toThrow(/^beginRound script: expected .*, got /);
  });
});
