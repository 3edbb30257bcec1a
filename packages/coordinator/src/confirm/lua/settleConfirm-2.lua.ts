import { defineScript } from '../../support/redis-client.js';

/** Ends confirmations nobody answered (timeout, cancellation), or reads the answer that won the race. */
export const settleConfirmScript = defineScript(
  'settleConfirm',
  2,
  `--[[
  KEYS[1] pending (HASH)  KEYS[2] decided (HASH)
  ARGV[1] decision JSON to apply to those still pending  ARGV[2] decided TTL ms  ARGV[3..] confirmationIds
  Returns, per id, the decision JSON that holds (the given one, or the answer already recorded).
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

/** settleConfirm's reply as its header states it: the decision JSON that holds, one per confirmationId given. */
export function parseSettleConfirmReply(reply: unknown): string[] {
  if (Array.isArray(reply) && reply.every((d): d is string => typeof d === 'string')) return reply;
  throw settleConfirmScript.unexpectedReply('a list of decision JSON strings', reply);
}
