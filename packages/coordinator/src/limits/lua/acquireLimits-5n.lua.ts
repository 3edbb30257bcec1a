import { defineScript } from '../../support/redis-client.js';

/** The Lua that drops lapsed leases from one limit (held places and waiters); expects `held, wait, wexp, now`. */
export const PURGE_LAPSED_LUA = `
local lapsed = redis.call('ZRANGEBYSCORE', wexp, '-inf', now)
for j = 1, #lapsed do
  redis.call('ZREM', wait, lapsed[j])
  redis.call('ZREM', wexp, lapsed[j])
end
redis.call('ZREMRANGEBYSCORE', held, '-inf', now)
`;

/** The server's clock in ms (every coordinator's leases measured by one clock). */
export const NOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Calls' places at the stages of one scope, the calls in the order given (those of one tick,
 * coalesced), each through the stages in order: a stage grants a place when one is free and no
 * earlier waiter would want it (arrival order), and the call holds it under a lease; at the first
 * stage that cannot, the call joins the stage's waiters (once: a waiter keeps its turn) and goes
 * no further. Lapsed leases (a coordinator that died) are dropped first.
 */
export const acquireLimitsScript = defineScript(
  'acquireLimits',
  5,
  `--[[
  KEYS[5i-4..5i] per stage i: held (ZSET ticket -> lease end ms), wait (ZSET ticket -> arrival),
    wexp (ZSET ticket -> waiter lease end ms), seq (STRING arrival counter), rate (ZSET ticket ->
    grant time ms, the stage's rate window; untouched without a rate)
  ARGV[1] lease ms  ARGV[2] key TTL ms  ARGV[2+i] stage i: "<concurrency>" or
    "<concurrency>/<rate count>/<window ms>"  ARGV[3+stages..] tickets
  Returns {granted, due} per ticket, flat: the ticket holds stages 1..granted; when granted <
  stages it waits at stage granted+1 and due is the ms until the earliest lease there ends, or
  (a full rate window) until its oldest grant leaves the window (0 when none): a waiter checks
  again then, as no event tells of a lease lapsing or a window moving.
]]
${NOW_LUA}
local leaseEnd = now + tonumber(ARGV[1])
local ttl = ARGV[2]
local stages = #KEYS / 5
local conc, count, window = {}, {}, {}
-- Each stage's sizes read once, then kept here as tickets are granted (one ZADD per grant, no
-- ZCARD per ticket); the TTLs of the sets that grew are set once at the end.
local heldN, waitN, rateN, grew = {}, {}, {}, {}
for i = 1, stages do
  local c, n, w = string.match(ARGV[2 + i], '^(%d+)/(%d+)/(%d+)$')
  if c then
    conc[i], count[i], window[i] = tonumber(c), tonumber(n), tonumber(w)
  else
    conc[i] = tonumber(ARGV[2 + i])
  end
  local held, wait, wexp = KEYS[5 * i - 4], KEYS[5 * i - 3], KEYS[5 * i - 2]
  ${PURGE_LAPSED_LUA}
  heldN[i] = redis.call('ZCARD', held)
  waitN[i] = redis.call('ZCARD', wait)
  if count[i] then
    redis.call('ZREMRANGEBYSCORE', KEYS[5 * i], '-inf', now - window[i])
    rateN[i] = redis.call('ZCARD', KEYS[5 * i])
  end
end
local function wait_at(i, ticket, rank)
  local held, wait, wexp, seq, rate = KEYS[5 * i - 4], KEYS[5 * i - 3], KEYS[5 * i - 2], KEYS[5 * i - 1], KEYS[5 * i]
  if not rank then
    redis.call('ZADD', wait, redis.call('INCR', seq), ticket)
    waitN[i] = waitN[i] + 1
  end
  redis.call('ZADD', wexp, leaseEnd, ticket)
  for _, k in ipairs({held, wait, wexp, seq}) do redis.call('PEXPIRE', k, ttl) end
  local due = 0
  for _, k in ipairs({held, wexp}) do
    local first = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
    if first[2] and (due == 0 or tonumber(first[2]) < due) then due = tonumber(first[2]) end
  end
  if count[i] then
    local oldest = redis.call('ZRANGE', rate, 0, 0, 'WITHSCORES')
    local out = oldest[2] and tonumber(oldest[2]) + window[i] + 1
    if out and out > now and (due == 0 or out < due) then due = out end
  end
  if due > 0 then due = math.max(due - now, 1) end
  return due
end
local function take(ticket)
  for i = 1, stages do
    local held, wait, wexp, rate = KEYS[5 * i - 4], KEYS[5 * i - 3], KEYS[5 * i - 2], KEYS[5 * i]
    local free = conc[i] - heldN[i]
    if count[i] then free = math.min(free, count[i] - rateN[i]) end
    local rank = false
    if waitN[i] > 0 then rank = redis.call('ZRANK', wait, ticket) end
    local ahead = rank or waitN[i]
    if free > 0 and ahead < free then
      -- NX: a ticket holding the stage already (a waiter looking again) keeps its place and lease.
      if redis.call('ZADD', held, 'NX', leaseEnd, ticket) == 1 then
        heldN[i] = heldN[i] + 1
        grew[i] = true
        if rank then
          redis.call('ZREM', wait, ticket)
          redis.call('ZREM', wexp, ticket)
          waitN[i] = waitN[i] - 1
        end
        if count[i] then
          rateN[i] = rateN[i] + redis.call('ZADD', rate, now, ticket)
        end
      end
    elseif not redis.call('ZSCORE', held, ticket) then
      return i - 1, wait_at(i, ticket, rank)
    end
  end
  return stages, 0
end
local out = {}
for t = 3 + stages, #ARGV do
  local granted, due = take(ARGV[t])
  out[#out + 1] = granted
  out[#out + 1] = due
end
for i = 1, stages do
  if grew[i] then
    redis.call('PEXPIRE', KEYS[5 * i - 4], ttl)
    if count[i] then redis.call('PEXPIRE', KEYS[5 * i], window[i] + 1000) end
  end
end
return out
`,
  { moreKeys: true },
);

/** acquireLimits' reply: the stages held, and in how many ms a waiter should look again (0: no lease ahead). */
export interface AcquireLimitsReply {
  granted: number;
  due: number;
}

/** acquireLimits' reply as its header states it (one {granted, due} per ticket), or an error naming the script and what came back. */
export function parseAcquireLimitsReply(reply: unknown, stages: number, tickets: number): AcquireLimitsReply[] {
  if (Array.isArray(reply) && reply.length === 2 * tickets) {
    const out: AcquireLimitsReply[] = [];
    for (let t = 0; t < tickets; t++) {
      const granted: unknown = reply[2 * t];
      const due: unknown = reply[2 * t + 1];
      if (!Number.isInteger(granted) || !Number.isInteger(due)) break;
      const g = granted as number;
      if (g < 0 || g > stages || (due as number) < 0) break;
      out.push({ granted: g, due: due as number });
    }
    if (out.length === tickets) return out;
  }
  throw acquireLimitsScript.unexpectedReply(`${tickets} × {granted 0..${stages}, due ms}`, reply);
}
