import { defineScript } from './script.js';

/**
 * Lua: removes the dedupe entries of `tool` from `entries` and `meta`, all of them when `filter`
 * is nil, else those whose paths meet a path in `filter` (a set). Returns how many went.
 * Shared by dropDedupe and commitRound.
 */
export const DROP_DEDUPE_LUA = `
local function dropDedupe(entries, meta, tool, filter)
  local all = redis.call('HGETALL', meta)
  local dropped = 0
  for i = 1, #all, 2 do
    local m = cjson.decode(all[i + 1])
    if m.tool == tool then
      local covered = filter == nil
      if not covered and type(m.paths) == 'table' then
        for _, p in ipairs(m.paths) do
          if filter[p] then
            covered = true
            break
          end
        end
      end
      if covered then
        redis.call('HDEL', entries, all[i])
        redis.call('HDEL', meta, all[i])
        dropped = dropped + 1
      end
    end
  end
  return dropped
end

local function pathSet(paths)
  if type(paths) ~= 'table' then
    return nil
  end
  local set = {}
  for _, p in ipairs(paths) do
    set[p] = true
  end
  return set
end
`;

/** Removes a run's dedupe entries of one tool, optionally only those whose paths meet the given ones. */
export const dropDedupeScript = defineScript(
  'dropDedupe',
  2,
  `--[[
  KEYS[1] dedupe entries (HASH key -> entry JSON)
  KEYS[2] dedupe meta (HASH key -> {"tool", "paths"} JSON)
  ARGV[1] tool  ARGV[2] paths as a JSON array, or "" for every entry of the tool
  Returns the number of entries removed.
]]
${DROP_DEDUPE_LUA}
local filter = nil
if ARGV[2] ~= '' then
  filter = pathSet(cjson.decode(ARGV[2]))
end
return dropDedupe(KEYS[1], KEYS[2], ARGV[1], filter)
`,
);
