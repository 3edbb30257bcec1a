import { defineScript } from '@tool-dispatch/shared/redis';

/**
 * Takes over concurrent calls whose outcome field still holds a running mark of a job that does
 * not exist (`claimStaleMarks`): each field is set to this job's mark only if it still holds the
 * stale one, so a call another job started or answered meanwhile is left alone.
 */
export const claimCallsScript = defineScript(
  'claimCalls',
  1,
  `--[[
  KEYS[h] round h's outcome hash (HASH: call index → outcome JSON or running mark)
  ARGV[1] this job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[3c] ARGV[3c+1] ARGV[3c+2] call c's hash (h), field and the stale mark it is expected to hold
  Per call one HGET, and an HSET when it still holds the stale mark; the TTL once per hash written.
  Returns one integer per call: 1 when it is now this job's, else 0.
]]
local out = {}
local written = {}
for b = 3, #ARGV - 2, 3 do
  local hash = KEYS[tonumber(ARGV[b])]
  if redis.call('HGET', hash, ARGV[b + 1]) == ARGV[b + 2] then
    redis.call('HSET', hash, ARGV[b + 1], ARGV[1])
    written[hash] = true
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
for h = 1, #KEYS do
  if written[KEYS[h]] then redis.call('PEXPIRE', KEYS[h], ARGV[2]) end
end
return out
`,
  { moreKeys: true },
);

/** claimCalls's reply as its header states it: per call, whether this job holds it now. */
export function parseClaimCallsReply(reply: unknown): boolean[] {
  if (Array.isArray(reply) && reply.every((v) => v === 1 || v === 0)) return reply.map((v) => v === 1);
  throw claimCallsScript.unexpectedReply('a list of 1 or 0, one per call', reply);
}
