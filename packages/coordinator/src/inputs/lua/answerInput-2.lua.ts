import { defineScript } from '../../support/redis-client.js';

/** Settles one parked call with its answer, if it is still parked and not past its deadline. */
export const answerInputScript = defineScript(
  'answerInput',
  2,
  `--[[
  KEYS[1] pending (HASH inputId -> ParkedInput JSON)  KEYS[2] settled (HASH inputId -> settlement JSON)
  ARGV[1] inputId  ARGV[2] settlement JSON  ARGV[3] TTL of the settled hash, ms  ARGV[4] now, epoch ms
  Returns 1 when answered; 0 when nothing is parked under the id (settled already, never parked,
  or past its deadline: its timeout is the waiter's to record).
]]
local item = redis.call('HGET', KEYS[1], ARGV[1])
if not item or cjson.decode(item).deadline < tonumber(ARGV[4]) then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`,
);

/** answerInput's reply as its header states it: true when answered, false when nothing was parked under the id. */
export function parseAnswerInputReply(reply: unknown): boolean {
  if (reply === 1 || reply === 0) return reply === 1;
  throw answerInputScript.unexpectedReply('1 or 0', reply);
}
