import { describe, expect, it } from 'vitest';
import { parseParkInputReply } from './parkInput-2.lua.js';

describe('parseParkInputReply', () => {
  it.each(['settled', 'parked', 'fresh'])('reads {"%s", <JSON>}', (status) => {
    expect(parseParkInputReply([status, '{"inputId":"in_1"}'])).toEqual({ status, value: '{"inputId":"in_1"}' });
  });

  it.each([
    ['a bare tag', 'fresh'],
    ['nil', null],
    ['an unknown tag', ['claimed', '{}']],
    ['a tag without its JSON', ['parked']],
    ['a number for the JSON', ['settled', 1]],
    ['more than two elements', ['fresh', '{}', '{}']],
  ])('throws naming the script for %s', (_what, reply) => {
    expect(() => parseParkInputReply(reply)).toThrow(/^parkInput script: expected .*, got /);
  });
});
