import { defineScript } from './script.js';

/** Takes a round's lease: always for a new round, only when lapsed for a takeover. */
export const claimRoundScript = defineScript(
  'claimRound',
  2,
  `--[[
  KEYS[1] leases (ZSET member -> lease end, epoch ms)  KEYS[2] owners (HASH member -> owner)
  ARGV[1] member  ARGV[2] owner  ARGV[3] now ms  ARGV[4] lease ms  ARGV[5] 1 = only if lapsed
  Returns 1 when the caller now holds the lease, 0 otherwise.
]]
if ARGV[5] == '1' then
  local until_ms = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not until_ms or tonumber(until_ms) >= tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`,
);

/** Extends a lease the caller still holds. */
export const renewRoundScript = defineScript(
  'renewRound',
  2,
  `--[[
  KEYS[1] leases (ZSET)  KEYS[2] owners (HASH)
  ARGV[1] member  ARGV[2] owner  ARGV[3] now ms  ARGV[4] lease ms
  Returns 1 when renewed, 0 when the lease belongs to another owner or is gone.
]]
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
return 1
`,
);
