import { defineScript } from '../../support/redis-client.js';

/** Moves a running round to a new owner (a takeover), fencing out the one before. */
export const takeRoundScript = defineScript(
  'takeRound',
  1,
  `--[[
  KEYS[1] the round (HASH: record, state, owner, origin, calls, planned)
  ARGV[1] the new owner
  Returns {"taken", calls JSON, planned JSON or false, origin}, where origin is the coordinator
  that began the round (kept as field origin from the first takeover on); {"done"} when the round
  is finished (done, or failed: given up); {"missing"} when there is no such round or it kept
  nothing to resume from.
]]
local r = redis.call('HMGET', KEYS[1], 'state', 'calls', 'planned', 'owner', 'origin')
if not r[1] then
  return {'missing'}
end
if r[1] == 'done' or r[1] == 'failed' then
  return {'done'}
end
if not r[2] then
  return {'missing'}
end
local origin = r[5] or r[4] or ''
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'origin', origin)
return {'taken', r[2], r[3], origin}
`,
);
