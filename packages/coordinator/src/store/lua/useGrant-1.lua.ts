import { defineScript } from '../../support/redis-client.js';

/**
 * Lua: of the live grants in KEYS[1] that cover a call, the narrowest (args before tool, a run's
 * before the session's), then the oldest, gets one more use; its JSON is returned. The same
 * choice as `rules/grants.ts` `pickGrant`, made atomically so a revoked grant is never used after
 * its HDEL and two coordinators count every use.
 */
export const useGrantScript = defineScript(
  'useGrant',
  1,
  `--[[
  KEYS[1] the session's grants (HASH grantId -> grant JSON, with "expiresMs" when it expires)
  ARGV[1] tool  ARGV[2] args hash  ARGV[3] run  ARGV[4] now (epoch ms)
  Returns the grant's JSON after its use was counted, or false when none covers the call.
]]
local now = tonumber(ARGV[4])
local best, bestRank, bestAt, bestId = nil, nil, nil, nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local g = cjson.decode(all[i + 1])
  local live = g.expiresMs == nil or tonumber(g.expiresMs) > now
  local covers = live and g.tool == ARGV[1]
    and (g.scope ~= 'args' or g.argsHash == ARGV[2])
    and (g.run == nil or g.run == ARGV[3])
  if covers then
    local rank = (g.scope == 'args' and 0 or 2) + (g.run == nil and 1 or 0)
    if best == nil or rank < bestRank or (rank == bestRank and g.createdAt < bestAt) then
      best, bestRank, bestAt, bestId = g, rank, g.createdAt, all[i]
    end
  elseif not live then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
if best == nil then
  return false
end
best.uses = (tonumber(best.uses) or 0) + 1
local json = cjson.encode(best)
redis.call('HSET', KEYS[1], bestId, json)
return json
`,
);

/** useGrant's reply: the grant's JSON, or null when no grant covers the call. */
export function parseUseGrantReply(reply: unknown): string | null {
  if (reply === null) return null;
  if (typeof reply === 'string' && reply.startsWith('{')) return reply;
  throw useGrantScript.unexpectedReply('a grant as JSON, or nil', reply);
}
