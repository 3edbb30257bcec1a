import { defineScript } from '../../support/redis-client.js';

/**
 * Lua: removes the dedupe entries of `tool` from `entries` and `meta`, all of them when `filter`
 * is nil, else those whose paths meet a path in `filter` (a set). Returns how many went. An entry
 * has meta (`{"tool", "paths"}`) only when it has paths or its key does not start with
 * `<tool>|` (`needsMeta`): the others are found by their key. Shared by dropDedupe and commitRound.
 */
export const DROP_DEDUPE_LUA = `
local function dropDedupe(entries, meta, tool, filter)
  local dropped = 0
  local all = redis.call('HGETALL', meta)
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
        dropped = dropped + redis.call('HDEL', entries, all[i])
        redis.call('HDEL', meta, all[i])
      end
    end
  end
  -- Entries without meta (no paths, key "<tool>|<hash>") go when every entry of the tool goes.
  if filter == nil then
    local prefix = tool .. '|'
    for _, k in ipairs(redis.call('HKEYS', entries)) do
      if string.sub(k, 1, #prefix) == prefix then
        dropped = dropped + redis.call('HDEL', entries, k)
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
  KEYS[2] dedupe meta (HASH key -> {"tool", "paths"} JSON; only for entries that need it)
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

/** Whether a dedupe entry needs a meta record: it has paths, or its key does not name its tool. */
export function needsMeta(entry: { key: string; tool: string; paths?: readonly string[] }): boolean {
  return entry.paths !== undefined || !entry.key.startsWith(`${entry.tool}|`);
}

/** dropDedupe's reply as its header states it: the number of entries removed. */
export function parseDropDedupeReply(reply: unknown): number {
  if (typeof reply === 'number' && Number.isSafeInteger(reply) && reply >= 0) return reply;
  throw dropDedupeScript.unexpectedReply('a count (an integer of 0 or more)', reply);
}
