import { describe, expect, it } from 'vitest';
import { parsePublishEventsReply } from './publishEvents-1.lua.js';

describe('parsePublishEventsReply', () => {
  it.each([0, 1, 5])('reads %i as the number of events added', (count) => {
    expect(parsePublishEventsReply(count)).toBe(count);
  });

  it.each([-1, 2.5, '1', null, ['1-0']])('throws naming the script for %j', (reply) => {
    expect(() => parsePublishEventsReply(reply)).toThrow(/^publishEvents script: expected a count .*, got /);
  });
});
