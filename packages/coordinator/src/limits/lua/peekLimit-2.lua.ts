import { defineScript } from '../../support/redis-client.js';
import { NOW_LUA } from './acquireLimits-5n.lua.js';

/**
 * What one limit holds now, read only: its places under a lease not lapsed, and when its full
 * rate window lets the next call start (the estimate of a rate_limited call's `retryAfterMs`).
 */
export const peekLimitScript = defineScript(
  'peekLimit',
  2,
  `--[[
  KEYS[1] held (ZSET ticket -> lease end ms)  KEYS[2] rate (ZSET ticket -> grant time ms), as acquireLimits
  ARGV[1] rate count (0: no rate)  ARGV[2] window ms
  Returns {held, next}: the places held, and the ms until the oldest grant of a full window leaves
  it (its next token, at least 1), 0 when the window has room or there is no rate.
]]
${NOW_LUA}
local held = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
local count, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local nextMs = 0
if count > 0 then
  local from = '(' .. (now - window)
  if redis.call('ZCOUNT', KEYS[2], from, '+inf') >= count then
    local oldest = redis.call('ZRANGEBYSCORE', KEYS[2], from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    nextMs = math.max(tonumber(oldest[2]) + window + 1 - now, 1)
  end
end
return {held, nextMs}
`,
);

/** peekLimit's reply: places held, ms until the next token (0: none needed). */
export interface PeekLimitReply {
  held: number;
  nextTokenMs: number;
}

/** peekLimit's reply as its header states it, or an error naming the script and what came back. */
export function parsePeekLimitReply(reply: unknown): PeekLimitReply {
  if (Array.isArray(reply) && reply.length === 2) {
    const [held, next] = reply as unknown[];
    if (Number.isInteger(held) && Number.isInteger(next) && (held as number) >= 0 && (next as number) >= 0)
      return { held: held as number, nextTokenMs: next as number };
  }
  throw peekLimitScript.unexpectedReply('{held, next ms}, two non-negative integers', reply);
}
