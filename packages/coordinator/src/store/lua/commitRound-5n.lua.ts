import { APPEND_EVENTS_LUA } from '../../support/event-stream.js';
import { defineScript } from '../../support/redis-client.js';
import { DROP_DEDUPE_LUA } from './dropDedupe-2.lua.js';

/**
 * DESIGN.md pass 3 for a whole round, its answer and its events in one step, fenced: item by
 * item in call order, the entry appended to the session's history and its tool's, the dedupe
 * entry put, what the call invalidates dropped; the round marked done with its response; then
 * (when asked) a `tool.result` event per call and `round.completed`. A round already done, or
 * owned by another coordinator (which took it over), writes nothing and hears `fenced`: so a
 * round is committed once. The round is then kept TD_ROUND_RETENTION_MS (v1.3; in this step, not
 * by a retainRound sent behind it: one script less a round).
 */
export const commitRoundScript = defineScript(
  'commitRound',
  5,
  `--[[
  KEYS[1] the round (HASH: record, state, owner, response)
  KEYS[2] session history (LIST)  KEYS[3] the run's dedupe entries (HASH)  KEYS[4] the run's dedupe meta (HASH)
  KEYS[5] the session's events (STREAM)  KEYS[6..] tool histories (LIST), one per tool the items name
  ARGV[1] TTL ms  ARGV[2] the committing owner ("" = unfenced)  ARGV[3] the round id as JSON
  ARGV[4] events MINID  ARGV[5] events TTL ms  ARGV[6] "1" to push the events TTL back
  ARGV[7] round.completed data JSON ("" to append no events)
  ARGV[8] "1" to push the histories' TTLs back (the caller does it at most so often per session,
    well within the TTL); "0" sets the TTL only of a history this commit creates
  ARGV[9] (v1.3) TD_ROUND_RETENTION_MS: the round, now done, is kept the lesser of this and the TTL
  ARGV[10] k, the run's places given back (0: none)  ARGV[11..10+k] their tickets; with k > 0 the last
    two KEYS are the run limit's held places (ZSET) and its waiters (ZSET), after the tool histories
  ARGV[11+k..] 7 fields per item: its result JSON (a non-empty object), its history fields
    ('"round":…,"run":…,"at":…'), index in KEYS of its tool history, dedupe key ("" for none),
    dedupe entry JSON, dedupe meta JSON ({"tool", "paths"}; "" when not needed), invalidations
    JSON ([{"tool", "paths"?}], "" for none)
  The history entry is the result with the history fields added at its end; the tool.result event
  is the result with "round" and "run" first; the round's answer is {"round", "results"} of the
  results in item order.
  Returns "fenced" (nothing written, no place given back) when the round is done, failed (given
  up) or owned by another coordinator, else "ok", or "ok waiters" when places were given back and
  calls wait at their limit (the caller wakes them).
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'owner')
if state[1] == 'done' or state[1] == 'failed' or (ARGV[2] ~= '' and state[2] and state[2] ~= ARGV[2]) then
  return 'fenced'
end
${DROP_DEDUPE_LUA}
${APPEND_EVENTS_LUA}
local events = ARGV[7] ~= ''
-- Writes are gathered and sent as one RPUSH per list and one HSET per hash (a command from Lua
-- costs about as much as the work it does here); the dedupe puts gathered so far go out before an
-- invalidation, which must see them, so the order of puts and drops is the items' order.
local history = {}
local byTool = {}
local tools = {}
local dedupe = {}
local meta = {}
local dedupedAny = false
local metaAny = false
local results = {}
local function putDedupe()
  if #dedupe > 0 then
    redis.call('HSET', KEYS[3], unpack(dedupe))
    dedupe = {}
  end
  if #meta > 0 then
    redis.call('HSET', KEYS[4], unpack(meta))
    meta = {}
  end
end
local give = tonumber(ARGV[10])
for i = 11 + give, #ARGV, 7 do
  local result = ARGV[i]
  local body = string.sub(result, 2, -2)
  local entry = '{' .. body .. ',' .. ARGV[i + 1] .. '}'
  local tool = KEYS[tonumber(ARGV[i + 2])]
  table.insert(results, result)
  table.insert(history, entry)
  local list = byTool[tool]
  if not list then
    list = {}
    byTool[tool] = list
    table.insert(tools, tool)
  end
  table.insert(list, entry)
  if ARGV[i + 3] ~= '' then
    table.insert(dedupe, ARGV[i + 3])
    table.insert(dedupe, ARGV[i + 4])
    if ARGV[i + 5] ~= '' then
      table.insert(meta, ARGV[i + 3])
      table.insert(meta, ARGV[i + 5])
      metaAny = true
    end
    dedupedAny = true
  end
  if ARGV[i + 6] ~= '' then
    putDedupe()
    for _, inv in ipairs(cjson.decode(ARGV[i + 6])) do
      dropDedupe(KEYS[3], KEYS[4], inv.tool, pathSet(inv.paths))
    end
  end
  if events then
    -- The event's "round" and "run" are the entry's, which start its history fields.
    local at = string.find(ARGV[i + 1], ',"at":', 1, true)
    appendEvent(KEYS[5], ARGV[4], 'tool.result', '{' .. string.sub(ARGV[i + 1], 1, at - 1) .. ',' .. body .. '}')
  end
end
putDedupe()
-- A list as long as what was pushed is new: it gets its TTL whether or not a push-back is due.
local function pushAll(key, entries)
  if redis.call('RPUSH', key, unpack(entries)) == #entries or ARGV[8] == '1' then
    redis.call('PEXPIRE', key, ARGV[1])
  end
end
if #results > 0 then
  pushAll(KEYS[2], history)
  for _, tool in ipairs(tools) do
    pushAll(tool, byTool[tool])
  end
end
if dedupedAny then
  redis.call('PEXPIRE', KEYS[3], ARGV[1])
end
if metaAny then
  redis.call('PEXPIRE', KEYS[4], ARGV[1])
end
if state[1] then
  local response = '{"round":' .. ARGV[3] .. ',"results":[' .. table.concat(results, ',') .. ']}'
  redis.call('HSET', KEYS[1], 'state', 'done', 'response', response)
  redis.call('HDEL', KEYS[1], 'calls', 'planned')
  redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[1]), tonumber(ARGV[9])))
end
if events then
  appendEvent(KEYS[5], ARGV[4], 'round.completed', ARGV[7])
  keepEvents(KEYS[5], ARGV[5], ARGV[6])
end
if give > 0 then
  redis.call('ZREM', KEYS[#KEYS - 1], unpack(ARGV, 11, 10 + give))
  if redis.call('EXISTS', KEYS[#KEYS]) == 1 then
    return 'ok waiters'
  end
end
return 'ok'
`,
  { moreKeys: true },
);

/** How commitRound ends: its whole reply. */
export const CommitRoundStatus = { Ok: 'ok', OkWaiters: 'ok waiters', Fenced: 'fenced' } as const;
export type CommitRoundStatus = (typeof CommitRoundStatus)[keyof typeof CommitRoundStatus];

/** commitRound's reply as its header states it, or an error naming the script and what came back. */
export function parseCommitRoundReply(reply: unknown): CommitRoundStatus {
  if (reply === CommitRoundStatus.Ok || reply === CommitRoundStatus.OkWaiters || reply === CommitRoundStatus.Fenced)
    return reply;
  throw commitRoundScript.unexpectedReply('"ok", "ok waiters" or "fenced"', reply);
}
