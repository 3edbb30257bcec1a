import { defineScript } from '../../support/redis-client.js';
import { IN_CHUNKS_LUA } from './heartbeat-2.lua.js';

/** Moves a lapsed coordinator's rounds onto the adopter's list; one adopter wins. */
export const adoptScript = defineScript(
  'adopt',
  4,
  `--[[
  KEYS[1] coordinators alive (ZSET)  KEYS[2] the lapsed coordinator's rounds (SET)  KEYS[3] the adopter's rounds (SET)
  KEYS[4] what the adoption gave (STRING, JSON {by, rounds})
  ARGV[1] the lapsed coordinator's id  ARGV[2] now ms  ARGV[3] TTL ms of the adopter's list
  ARGV[4] the adopter's id  ARGV[5] TTL ms of KEYS[4]
  Returns the adopted members, or false when the lease is not lapsed (renewed, or adopted already).
  Idempotent for its adopter: run again (ioredis resends a command whose reply a dropped connection
  lost), it answers the same members again, not false, so the adopter still resumes them.
]]
${IN_CHUNKS_LUA}
local until_ms = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not until_ms or tonumber(until_ms) >= tonumber(ARGV[2]) then
  local given = redis.call('GET', KEYS[4])
  if given then
    local record = cjson.decode(given)
    if record.by == ARGV[4] then
      return record.rounds
    end
  end
  return false
end
redis.call('ZREM', KEYS[1], ARGV[1])
local rounds = redis.call('SMEMBERS', KEYS[2])
if #rounds > 0 then
  inChunks('SADD', KEYS[3], rounds, 1)
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[4], cjson.encode({by = ARGV[4], rounds = rounds}), 'PX', ARGV[5])
return rounds
`,
);

/**
 * adopt's reply as its header states it: the adopted round members (maybe none), or null (Lua's
 * false) when the lease is not lapsed.
 */
export function parseAdoptReply(reply: unknown): string[] | null {
  if (reply === null) return null;
  if (Array.isArray(reply) && reply.every((m): m is string => typeof m === 'string')) return reply;
  throw adoptScript.unexpectedReply('a list of round members, or nil', reply);
}
