import { defineScript } from '../../support/redis-client.js';

/**
 * Pushes back the leases of one coordinator's places and turns at one limit (its heartbeat for
 * them), and tells which it no longer has: those that lapsed (the coordinator stalled past its
 * lease) or were let go of meanwhile.
 */
export const renewLimitScript = defineScript(
  'renewLimit',
  4,
  `--[[
  KEYS[1] held  KEYS[2] wait  KEYS[3] wexp  KEYS[4] seq (as acquireLimits)
  ARGV[1] lease ms  ARGV[2] key TTL ms  ARGV[3..] tickets
  Returns the tickets neither held nor waiting, an array, possibly empty.
]]
local t = redis.call('TIME')
local leaseEnd = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 3, #ARGV do
  local ticket = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], ticket) then
    redis.call('ZADD', KEYS[1], 'XX', leaseEnd, ticket)
  elseif redis.call('ZSCORE', KEYS[3], ticket) then
    redis.call('ZADD', KEYS[3], 'XX', leaseEnd, ticket)
  else
    lost[#lost + 1] = ticket
  end
end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return lost
`,
);

/** renewLimit's reply: the tickets this coordinator no longer holds nor waits with. */
export function parseRenewLimitReply(reply: unknown): string[] {
  if (Array.isArray(reply) && reply.every((t) => typeof t === 'string')) return reply;
  throw renewLimitScript.unexpectedReply('an array of tickets', reply);
}
