import { defineScript } from './script.js';

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
local filter = nil
if ARGV[2] ~= '' then
  filter = {}
  for _, p in ipairs(cjson.decode(ARGV[2])) do
    filter[p] = true
  end
end
local meta = redis.call('HGETALL', KEYS[2])
local dropped = 0
for i = 1, #meta, 2 do
  local m = cjson.decode(meta[i + 1])
  if m.tool == ARGV[1] then
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
      redis.call('HDEL', KEYS[1], meta[i])
      redis.call('HDEL', KEYS[2], meta[i])
      dropped = dropped + 1
    end
  end
end
return dropped
`,
);
