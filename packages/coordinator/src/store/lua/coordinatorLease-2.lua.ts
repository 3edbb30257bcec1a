import { defineScript } from './script.js';

/** A coordinator's heartbeat: its lease pushed back, and the rounds it finished off its list. */
export const heartbeatScript = defineScript(
  'heartbeat',
  2,
  `--[[
  KEYS[1] coordinators alive (ZSET id -> lease end, epoch ms)  KEYS[2] this coordinator's rounds (SET)
  ARGV[1] coordinator id  ARGV[2] lease end ms  ARGV[3] TTL ms of both keys
  ARGV[4..] members of finished rounds
]]
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if #ARGV > 3 then
  redis.call('SREM', KEYS[2], unpack(ARGV, 4))
end
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
local until_ms = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not until_ms or tonumber(until_ms) >= tonumber(ARGV[2]) then
  return false
end
redis.call('ZREM', KEYS[1], ARGV[1])
local rounds = redis.call('SMEMBERS', KEYS[2])
if #rounds > 0 then
  redis.call('SADD', KEYS[3], unpack(rounds))
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
redis.call('DEL', KEYS[2])
return rounds
`,
);
