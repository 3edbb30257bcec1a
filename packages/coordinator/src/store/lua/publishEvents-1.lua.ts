import { defineScript } from './script.js';

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
local added = 0
for i = 4, #ARGV, 2 do
  redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'name', ARGV[i], 'data', ARGV[i + 1])
  added = added + 1
end
if ARGV[3] == '1' or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return added
`,
);
