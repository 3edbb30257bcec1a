import { defineScript } from '../../support/redis-client.js';

/** Lua: `call(cmd, key, list, from)` runs cmd on key with list[from..] in chunks (unpack takes a few thousand values at most). */
const IN_CHUNKS_LUA = `
local function inChunks(cmd, key, list, from)
  for i = from, #list, 500 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 499, #list)))
  end
end
`;

/** A coordinator's heartbeat: its lease pushed back, and the rounds it finished off its list. */
export const heartbeatScript = defineScript(
  'heartbeat',
  2,
  `--[[
  KEYS[1] coordinators alive (ZSET id -> lease end, epoch ms)  KEYS[2] this coordinator's rounds (SET)
  ARGV[1] coordinator id  ARGV[2] lease end ms  ARGV[3] TTL ms of both keys
  ARGV[4..] members of finished rounds
]]
${IN_CHUNKS_LUA}
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
inChunks('SREM', KEYS[2], ARGV, 4)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`,
);

/** Moves a lapsed coordinator's rounds onto the adopter's list; one adopter wins. */
export const adoptScript = defineScript(
  'adopt',
  3,
  `--[[
  KEYS[1] coordinators alive (ZSET)  KEYS[2] the lapsed coordinator's rounds (SET)  KEYS[3] the adopter's rounds (SET)
  ARGV[1] the lapsed coordinator's id  ARGV[2] now ms  ARGV[3] TTL ms of the adopter's list
  Returns the adopted members, or false when the lease is not lapsed (renewed, or adopted already).
]]
${IN_CHUNKS_LUA}
local until_ms = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not until_ms or tonumber(until_ms) >= tonumber(ARGV[2]) then
  return false
end
redis.call('ZREM', KEYS[1], ARGV[1])
local rounds = redis.call('SMEMBERS', KEYS[2])
if #rounds > 0 then
  inChunks('SADD', KEYS[3], rounds, 1)
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
redis.call('DEL', KEYS[2])
return rounds
`,
);
