import { defineScript } from '../../support/redis-client.js';
import { PURGE_LAPSED_LUA } from './acquireLimits-5n.lua.js';

/**
 * Calls (those of one tick, coalesced) let go of their places at the stages of one scope, or of
 * their turn where they wait (cancelled): whatever they hold or wait for goes. Tells which stages now have a free place and
 * someone waiting, so their waiters are woken (pub/sub).
 */
export const releaseLimitsScript = defineScript(
  'releaseLimits',
  4,
  `--[[
  KEYS[4i-3..4i] per stage i: held, wait, wexp, seq (as acquireLimits)
  ARGV[i] stage i's concurrency  ARGV[stages+1..] tickets
  Returns the (1-based) stages with a free place and a waiter, an array, possibly empty.
]]
local stages = #KEYS / 4
-- The clock only when a stage has waiters (its lapsed leases dropped): most releases wake no one.
local now
local tickets = {}
for t = stages + 1, #ARGV do tickets[#tickets + 1] = ARGV[t] end
local wake = {}
for i = 1, stages do
  local held, wait, wexp = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1]
  redis.call('ZREM', held, unpack(tickets))
  if redis.call('ZCARD', wait) > 0 then
    redis.call('ZREM', wait, unpack(tickets))
    redis.call('ZREM', wexp, unpack(tickets))
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    ${PURGE_LAPSED_LUA}
    if redis.call('ZCARD', wait) > 0 and redis.call('ZCARD', held) < tonumber(ARGV[i]) then
      wake[#wake + 1] = i
    end
  end
end
return wake
`,
  { moreKeys: true },
);

/** releaseLimits' reply: the 1-based stages whose waiters should look again. */
export function parseReleaseLimitsReply(reply: unknown, stages: number): number[] {
  if (Array.isArray(reply) && reply.every((i) => Number.isInteger(i) && i >= 1 && i <= stages)) return reply;
  throw releaseLimitsScript.unexpectedReply(`an array of stages 1..${stages}`, reply);
}
