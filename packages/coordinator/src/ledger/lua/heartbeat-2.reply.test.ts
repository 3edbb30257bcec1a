import { describe, expect, it } from 'vitest';
import { parseHeartbeatReply } from './heartbeat-2.lua.js';

describe('parseHeartbeatReply', () => {
  it('accepts 1', () => {
    expect(() => parseHeartbeatReply(1)).not.toThrow();
  });

  it.each([0, '1', null, [1]])('throws naming the script for %j', (reply) => {
    expect(() => parseHeartbeatReply(reply)).toThrow(/^heartbeat script: expected 1, got /);
  });
});
