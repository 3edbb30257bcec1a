import { APPEND_EVENTS_LUA } from '../../support/event-stream.js';
import { defineScript } from '../../support/redis-client.js';

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
