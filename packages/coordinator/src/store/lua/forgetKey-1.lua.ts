import { defineScript } from '../../support/redis-client.js';

/**
 * (v1.3) An Idempotency-Key whose round is gone (its retention passed): dropped, so the key
 * begins a new round; only while it still names that round (a retry may have claimed it again).
 */
export const forgetKeyScript = defineScript(
  'forgetKey',
  1,
  `--[[
  KEYS[1] the idempotency key (STRING "<round>|<callsHash>")  ARGV[1] the round it named
  Returns 1 when dropped, 0 when it is gone or names another round.
]]
local held = redis.call('GET', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`,
);

/** forgetKey's reply as its header states it: true when the key was dropped. */
export function parseForgetKeyReply(reply: unknown): boolean {
  if (reply === 1 || reply === 0) return reply === 1;
  throw forgetKeyScript.unexpectedReply('1 or 0', reply);
}
