import { DROP_DEDUPE_LUA } from './dropDedupe-2.lua.js';
import { defineScript } from './script.js';

/**
 * DESIGN.md pass 3 for a whole round in one script, item by item in call order: claim
 * (round, callIndex) once, append to the histories, put the dedupe entry, drop what the
 * call invalidates. Idempotent: an item committed before is skipped.
 */
export const commitResultsScript = defineScript(
  'commitResults',
  5,
  `--[[
  KEYS[1] committed claims (SET)  KEYS[2] session history (LIST)  KEYS[3] session (HASH; only its TTL is refreshed)
  KEYS[4] the run's dedupe entries (HASH)  KEYS[5] the run's dedupe meta (HASH)
  KEYS[6..] tool histories (LIST), one per tool the items name
  ARGV[1] TTL ms, then 7 fields per item:
    claim "<round>|<callIndex>", entry JSON, index in KEYS of its tool history,
    dedupe key ("" for none), dedupe entry JSON, dedupe meta JSON ({"tool", "paths"}),
    invalidations JSON ([{"tool", "paths"?}], "" for none)
  Returns one integer per item: 1 when recorded now, 0 when committed before.
]]
${DROP_DEDUPE_LUA}
local out = {}
local touched = {}
local recordedAny = false
local dedupedAny = false
for i = 2, #ARGV, 7 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 0 then
    table.insert(out, 0)
  else
    table.insert(out, 1)
    recordedAny = true
    local tool = KEYS[tonumber(ARGV[i + 2])]
    redis.call('RPUSH', KEYS[2], ARGV[i + 1])
    redis.call('RPUSH', tool, ARGV[i + 1])
    touched[tool] = true
    if ARGV[i + 3] ~= '' then
      redis.call('HSET', KEYS[4], ARGV[i + 3], ARGV[i + 4])
      redis.call('HSET', KEYS[5], ARGV[i + 3], ARGV[i + 5])
      dedupedAny = true
    end
    if ARGV[i + 6] ~= '' then
      for _, inv in ipairs(cjson.decode(ARGV[i + 6])) do
        dropDedupe(KEYS[4], KEYS[5], inv.tool, pathSet(inv.paths))
      end
    end
  end
end
if recordedAny then
  for k = 1, 3 do
    redis.call('PEXPIRE', KEYS[k], ARGV[1])
  end
  for tool in pairs(touched) do
    redis.call('PEXPIRE', tool, ARGV[1])
  end
end
if dedupedAny then
  redis.call('PEXPIRE', KEYS[4], ARGV[1])
  redis.call('PEXPIRE', KEYS[5], ARGV[1])
end
return out
`,
  { moreKeys: true },
);
