import { defineScript } from './script.js';

/** Marks a round done with its response; a round that was never begun stays absent. */
export const finishRoundScript = defineScript(
  'finishRound',
  1,
  `--[[
  KEYS[1] the round (HASH)
  ARGV[1] response JSON  ARGV[2] TTL ms
  Returns 1 when finished, 0 when the round does not exist.
]]
if redis.call('HEXISTS', KEYS[1], 'record') == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'done', 'response', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`,
);
