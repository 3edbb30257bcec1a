import { defineScript } from '../redis-client.js';

/**
 * Ends entries nobody answered (a confirmation or a parked call that timed out or was cancelled),
 * or reads the answer that won the race. One script for the confirm and inputs seams, whose
 * pending and answered hashes have the same shape.
 */
export const settlePendingScript = defineScript(
  'settlePending',
  2,
  `--[[
  KEYS[1] pending (HASH)  KEYS[2] answered (HASH)
  ARGV[1] outcome JSON to apply to those still pending  ARGV[2] TTL of the answered hash, ms
  ARGV[3..] ids (confirmationIds or inputIds)
  Returns, per id, the outcome JSON that holds (the given one, or the answer already recorded).
]]
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  if redis.call('HDEL', KEYS[1], id) == 1 then
    redis.call('HSET', KEYS[2], id, ARGV[1])
    table.insert(out, ARGV[1])
  else
    table.insert(out, redis.call('HGET', KEYS[2], id) or ARGV[1])
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return out
`,
);

/** settlePending's reply as its header states it: the outcome JSON that holds, one per id given. */
export function parseSettlePendingReply(reply: unknown): string[] {
  if (Array.isArray(reply) && reply.every((d): d is string => typeof d === 'string')) return reply;
  throw settlePendingScript.unexpectedReply('a list of outcome JSON strings', reply);
}
