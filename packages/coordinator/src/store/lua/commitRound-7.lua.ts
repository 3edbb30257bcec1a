import { commitItemsLua, ITEM_FIELDS_DOC } from './commitResults-5.lua.js';
import { DROP_DEDUPE_LUA } from './dropDedupe-2.lua.js';
import { APPEND_EVENTS_LUA } from './publishEvents-1.lua.js';
import { defineScript } from './script.js';

/**
 * Pass 3, the round's answer and its events in one step, fenced by the round's owner:
 * commitResults over the items, the round marked done with its response, then (when asked) a
 * `tool.result` event per call recorded now and `round.completed`. A coordinator that no longer
 * owns the round (another took it over) writes nothing and hears `fenced`.
 */
export const commitRoundScript = defineScript(
  'commitRound',
  7,
  `--[[
  KEYS[1] the round (HASH: record, state, owner, response)
  KEYS[2] committed claims (SET)  KEYS[3] session history (LIST)  KEYS[4] session (HASH; only its TTL is refreshed)
  KEYS[5] the run's dedupe entries (HASH)  KEYS[6] the run's dedupe meta (HASH)  KEYS[7] the session's events (STREAM)
  KEYS[8..] tool histories (LIST), one per tool the items name
  ARGV[1] TTL ms  ARGV[2] the committing owner ("" = unfenced)  ARGV[3] response JSON
  ARGV[4] events MINID  ARGV[5] events TTL ms  ARGV[6] "1" to push the events TTL back
  ARGV[7] round.completed data JSON ("" to append no events)
  ARGV[8..] ${ITEM_FIELDS_DOC},
    and 8th, its tool.result data JSON
  Returns "fenced" (nothing written) when the round is done or owned by another coordinator,
  else one integer per item: 1 when recorded now, 0 when committed before.
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'owner')
if state[1] == 'done' or (ARGV[2] ~= '' and state[2] and state[2] ~= ARGV[2]) then
  return 'fenced'
end
${DROP_DEDUPE_LUA}
${APPEND_EVENTS_LUA}
local events = ARGV[7] ~= ''
${commitItemsLua({ committed: 'KEYS[2]', history: 'KEYS[3]', session: 'KEYS[4]', dedupe: 'KEYS[5]', meta: 'KEYS[6]' }, 8, 'ARGV[1]', { onRecorded: "if events then appendEvent(KEYS[7], ARGV[4], 'tool.result', ARGV[i + 7]) end" })}
if state[1] then
  redis.call('HSET', KEYS[1], 'state', 'done', 'response', ARGV[3])
  redis.call('HDEL', KEYS[1], 'calls', 'planned')
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if events then
  appendEvent(KEYS[7], ARGV[4], 'round.completed', ARGV[7])
  keepEvents(KEYS[7], ARGV[5], ARGV[6])
end
return out
`,
  { moreKeys: true },
);
