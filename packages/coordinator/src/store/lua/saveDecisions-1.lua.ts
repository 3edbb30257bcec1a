import { defineScript } from '../../support/redis-client.js';

/** Stores a round's pass-1 decisions once a person answered its confirmations, if the caller still owns it. */
export const saveDecisionsScript = defineScript(
  'saveDecisions',
  1,
  `--[[
  KEYS[1] the round (HASH)  ARGV[1] owner  ARGV[2] decisions JSON
  Returns 1 when stored, 0 when the round is done, gone, or owned by another coordinator.
]]
local r = redis.call('HMGET', KEYS[1], 'state', 'owner')
if r[1] ~= 'running' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'planned', ARGV[2])
return 1
`,
);

/** saveDecisions's reply as its header states it: true when stored, false when the round is done, gone or another's. */
export function parseSaveDecisionsReply(reply: unknown): boolean {
  if (reply === 1 || reply === 0) return reply === 1;
  throw saveDecisionsScript.unexpectedReply('1 or 0', reply);
}
