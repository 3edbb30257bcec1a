import { defineScript } from '../../../support/redis-client.js';

/**
 * The safety net's verdict on a call (a failed job, a lost worker, a job nobody took) recorded
 * under the call's outcome field before the coordinator answers with it, first write winning as in
 * the worker's recordOutcomes: a worker's outcome recorded before stands and is the answer, and a
 * worker reporting after (healed from a partition, its call stopped by its fence) finds the
 * verdict there, so its late outcome is neither recorded nor sent (issue #43).
 */
export const recordVerdictScript = defineScript(
  'recordVerdict',
  1,
  `--[[
  KEYS[1] the call's round's outcome hash (HASH, outcomeSlot)
  ARGV[1] the call's field  ARGV[2] the verdict's outcome JSON  ARGV[3] outcome TTL ms
  The field takes the verdict when it is empty or holds a running mark ("running <job id>").
  The hash gets the TTL only when it has none (new): a committed round's shortened TTL stays.
  Returns the outcome JSON that stands: the verdict, or the outcome recorded before.
]]
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, 8) ~= 'running ' then
  return v
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return ARGV[2]
`,
);

/** recordVerdict's reply as its header states it: the outcome JSON that stands. */
export function parseRecordVerdictReply(reply: unknown): string {
  if (typeof reply === 'string' && reply.length > 0) return reply;
  throw recordVerdictScript.unexpectedReply('the outcome JSON that stands', reply);
}
