import { DROP_DEDUPE_LUA } from './dropDedupe-2.lua.js';
import { defineScript } from './script.js';

/**
 * Lua: pass 3 over the items in ARGV from `first` on (7 fields each), item by item in call order:
 * claim (round, callIndex) once, append to the histories, put the dedupe entry, drop what the
 * call invalidates; then push back the TTLs of what it wrote. Leaves `out` holding one integer
 * per item (1 recorded now, 0 committed before). `k` names the keys: committed claims (SET),
 * session history (LIST), session (HASH; only its TTL), dedupe entries and meta (HASH); a tool
 * history is KEYS[<its item's index field>]. Shared by commitResults and commitRound.
 */
export function commitItemsLua(
  k: { committed: string; history: string; session: string; dedupe: string; meta: string },
  first: number,
  ttl: string,
  /** Per item, an 8th field and Lua run for each item recorded now (ARGV[i] is its first field). */
  extra?: { onRecorded: string },
): string {
  return `
local out = {}
local touched = {}
local recordedAny = false
local dedupedAny = false
for i = ${first}, #ARGV, ${extra ? 8 : 7} do
  if redis.call('SADD', ${k.committed}, ARGV[i]) == 0 then
    table.insert(out, 0)
  else
    table.insert(out, 1)
    recordedAny = true
    local tool = KEYS[tonumber(ARGV[i + 2])]
    redis.call('RPUSH', ${k.history}, ARGV[i + 1])
    redis.call('RPUSH', tool, ARGV[i + 1])
    touched[tool] = true
    if ARGV[i + 3] ~= '' then
      redis.call('HSET', ${k.dedupe}, ARGV[i + 3], ARGV[i + 4])
      redis.call('HSET', ${k.meta}, ARGV[i + 3], ARGV[i + 5])
      dedupedAny = true
    end
    if ARGV[i + 6] ~= '' then
      for _, inv in ipairs(cjson.decode(ARGV[i + 6])) do
        dropDedupe(${k.dedupe}, ${k.meta}, inv.tool, pathSet(inv.paths))
      end
    end
    ${extra?.onRecorded ?? ''}
  end
end
if recordedAny then
  redis.call('PEXPIRE', ${k.committed}, ${ttl})
  redis.call('PEXPIRE', ${k.history}, ${ttl})
  redis.call('PEXPIRE', ${k.session}, ${ttl})
  for tool in pairs(touched) do
    redis.call('PEXPIRE', tool, ${ttl})
  end
end
if dedupedAny then
  redis.call('PEXPIRE', ${k.dedupe}, ${ttl})
  redis.call('PEXPIRE', ${k.meta}, ${ttl})
end
`;
}

export const ITEM_FIELDS_DOC = `7 fields per item:
    claim "<round>|<callIndex>", entry JSON, index in KEYS of its tool history,
    dedupe key ("" for none), dedupe entry JSON, dedupe meta JSON ({"tool", "paths"}),
    invalidations JSON ([{"tool", "paths"?}], "" for none)`;

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
  ARGV[1] TTL ms, then ${ITEM_FIELDS_DOC}
  Returns one integer per item: 1 when recorded now, 0 when committed before.
]]
${DROP_DEDUPE_LUA}
${commitItemsLua({ committed: 'KEYS[1]', history: 'KEYS[2]', session: 'KEYS[3]', dedupe: 'KEYS[4]', meta: 'KEYS[5]' }, 2, 'ARGV[1]')}
return out
`,
  { moreKeys: true },
);
