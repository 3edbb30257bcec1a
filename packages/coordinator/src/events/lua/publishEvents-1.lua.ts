import { defineScript } from '../../support/redis-client.js';

/**
 * Lua: `appendEvent` adds one event to a session's stream, trimmed (approximately) to MINID
 * `minId`; `keepEvents` sets the stream's TTL when `refresh` is "1" or it has none. Shared by
 * publishEvents and the round scripts that append their events themselves.
 */
export const APPEND_EVENTS_LUA = `
local function appendEvent(key, minId, name, data)
  redis.call('XADD', key, 'MINID', '~', minId, '*', 'name', name, 'data', data)
end
local function keepEvents(key, ttl, refresh)
  if refresh == '1' or redis.call('PTTL', key) < 0 then
    redis.call('PEXPIRE', key, ttl)
  end
end
`;

/** Appends events to a session's stream in order, trimmed to the replay window, in one step. */
export const publishEventsScript = defineScript(
  'publishEvents',
  1,
  `--[[
  KEYS[1] the session's events (STREAM)
  ARGV[1] MINID to trim to (approximately)  ARGV[2] TTL ms
  ARGV[3] "1" to set the TTL; else it is set only on a stream without one
  ARGV[4..] name, data JSON: one pair per event
  Returns the number of events added.
]]
${APPEND_EVENTS_LUA}
local added = 0
for i = 4, #ARGV, 2 do
  appendEvent(KEYS[1], ARGV[1], ARGV[i], ARGV[i + 1])
  added = added + 1
end
keepEvents(KEYS[1], ARGV[2], ARGV[3])
return added
`,
);

/** publishEvents's reply as its header states it: the number of events added. */
export function parsePublishEventsReply(reply: unknown): number {
  if (typeof reply === 'number' && Number.isSafeInteger(reply) && reply >= 0) return reply;
  throw publishEventsScript.unexpectedReply('a count (an integer of 0 or more)', reply);
}
