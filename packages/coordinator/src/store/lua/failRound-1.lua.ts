import { defineScript } from '../../support/redis-client.js';

/** Ends a round its owner gave up on: failed, with why, and nothing left to resume from. */
export const failRoundScript = defineScript(
  'failRound',
  1,
  `--[[
  KEYS[1] the round (HASH)  ARGV[1] owner  ARGV[2] why it failed
  Returns 1 when marked failed, 0 when the round is done, gone, or owned by another coordinator.
]]
local r = redis.call('HMGET', KEYS[1], 'state', 'owner')
if r[1] ~= 'running' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[2])
redis.call('HDEL', KEYS[1], 'calls', 'planned')
return 1
`,
);

/** failRound's reply as its header states it: true when marked failed, false when the round is done, gone or another's. */
export function parseFailRoundReply(reply: unknown): boolean {
  if (reply === 1 || reply === 0) return reply === 1;
  throw failRoundScript.unexpectedReply('1 or 0', reply);
}
