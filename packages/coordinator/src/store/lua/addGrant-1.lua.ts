import { defineScript } from '../../support/redis-client.js';

/** Keeps a grant unless the session has `max` live ones already (expired ones are dropped first). */
export const addGrantScript = defineScript(
  'addGrant',
  1,
  `--[[
  KEYS[1] the session's grants (HASH grantId -> grant JSON)
  ARGV[1] grantId  ARGV[2] grant JSON  ARGV[3] now (epoch ms)  ARGV[4] most grants  ARGV[5] TTL of the key (ms)
  Returns 1 when kept, 0 when the session has the most grants already.
]]
local now = tonumber(ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
local live = 0
for i = 1, #all, 2 do
  local g = cjson.decode(all[i + 1])
  if g.expiresMs ~= nil and tonumber(g.expiresMs) <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    live = live + 1
  end
end
if live >= tonumber(ARGV[4]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`,
);

/** addGrant's reply: true when kept. */
export function parseAddGrantReply(reply: unknown): boolean {
  if (reply === 0 || reply === 1) return reply === 1;
  throw addGrantScript.unexpectedReply('0 or 1', reply);
}
