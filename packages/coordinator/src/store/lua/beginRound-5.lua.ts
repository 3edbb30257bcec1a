import { APPEND_EVENTS_LUA } from '../../support/event-stream.js';
import { defineScript } from '../../support/redis-client.js';

/** Starts a round of an existing session, claiming its idempotency key atomically with creating the round record. */
export const beginRoundScript = defineScript(
  'beginRound',
  5,
  `--[[
  Starts a round under an idempotency key, or reports the round that already holds the key.
  KEYS[1] the new round (HASH)  KEYS[2] idempotency key (STRING "<round>|<callsHash>")
  KEYS[3] session (HASH; read, and its TTL refreshed)
  ARGV[1] round id  ARGV[2] calls hash  ARGV[3] record JSON  ARGV[4] TTL ms
  ARGV[5] "1" when an idempotency key is used
  ARGV[6] the coordinator running the round ("" for none)  ARGV[7] the round's calls as JSON ("" for none),
  kept (as fields owner and calls) so another coordinator can take the round over
  KEYS[4] the session's events (STREAM)  ARGV[8] MINID  ARGV[9] events TTL ms  ARGV[10] "1" to push the TTL back
  ARGV[11] round.started data JSON ("" to append no event)
  KEYS[5] the run's dedupe entries (HASH)  ARGV[12..] dedupe keys pass 1 will look up
  Returns {"new", <session HGETALL>, <HMGET of the dedupe keys>}, {"existing" | "conflict", <round id holding the key>},
  or {"no_session"} (nothing written) when the session does not exist.
]]
${APPEND_EVENTS_LUA}
local session = redis.call('HGETALL', KEYS[3])
if #session == 0 then
  return {'no_session'}
end
if ARGV[5] == '1' then
  local held = redis.call('GET', KEYS[2])
  if held then
    local sep = string.find(held, '|', 1, true)
    local round = string.sub(held, 1, sep - 1)
    local hash = string.sub(held, sep + 1)
    if hash == ARGV[2] then
      return {'existing', round}
    end
    return {'conflict', round}
  end
  redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[4])
end
redis.call('DEL', KEYS[1])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'record', ARGV[3], 'state', 'running', 'owner', ARGV[6], 'calls', ARGV[7])
else
  redis.call('HSET', KEYS[1], 'record', ARGV[3], 'state', 'running')
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
if ARGV[11] ~= '' then
  appendEvent(KEYS[4], ARGV[8], 'round.started', ARGV[11])
  keepEvents(KEYS[4], ARGV[9], ARGV[10])
end
local found = {}
if #ARGV > 11 then
  found = redis.call('HMGET', KEYS[5], unpack(ARGV, 12))
end
return {'new', session, found}
`,
);
