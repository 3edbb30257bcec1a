import { defineScript } from '../../support/redis-client.js';

/**
 * (v1.3) TD_ROUND_RETENTION_MS: a round that ended (done or failed) is kept that long from now,
 * never longer than it would be kept already (PEXPIRE … LT), so running it again extends nothing.
 * Sent right after failRound on the same connection (commitRound keeps a committed round for
 * the retention itself, in the same step).
 */
export const retainRoundScript = defineScript(
  'retainRound',
  1,
  `--[[
  KEYS[1] the round (HASH)  ARGV[1] retention ms
  Returns 1 when the round has ended (its TTL now at most the retention), 0 when it runs or is gone.
]]
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'done' and state ~= 'failed' then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[1], 'LT')
return 1
`,
);

/** retainRound's reply as its header states it: true when the round had ended. */
export function parseRetainRoundReply(reply: unknown): boolean {
  if (reply === 1 || reply === 0) return reply === 1;
  throw retainRoundScript.unexpectedReply('1 or 0', reply);
}
