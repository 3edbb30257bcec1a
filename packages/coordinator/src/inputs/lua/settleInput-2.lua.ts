import { defineScript } from '../../support/redis-client.js';

/** Ends parked calls nobody answered (timeout, cancellation), or reads the answer that won the race. */
export const settleInputScript = defineScript(
  'settleInput',
  2,
  `--[[
  KEYS[1] pending (HASH)  KEYS[2] settled (HASH)
  ARGV[1] settlement JSON to apply to those still parked  ARGV[2] TTL of the settled hash, ms
  ARGV[3..] inputIds
  Returns, per inputId, the settlement JSON that holds (the given one, or the one recorded before).
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

/** settleInput's reply as its header states it: the settlement JSON that holds, one per inputId given. */
export function parseSettleInputReply(reply: unknown): string[] {
  if (Array.isArray(reply) && reply.every((d): d is string => typeof d === 'string')) return reply;
  throw settleInputScript.unexpectedReply('a list of settlement JSON strings', reply);
}
