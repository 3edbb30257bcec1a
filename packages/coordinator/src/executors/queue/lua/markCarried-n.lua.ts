import { OUTCOME_TTL_MS, type RedisKeys, RUNNING_MARK } from '@tool-dispatch/shared/redis';
import { getOrCreate } from '../../../support/maps.js';
import { defineScript } from '../../../support/redis-client.js';

/**
 * Before a job of concurrent calls is added: each call's outcome field names the job carrying it
 * (the running mark a worker would set), unless it holds something already. A worker taking the
 * job on its first delivery then starts the calls without a check of its own, and another job
 * carrying one of them (a takeover grouping calls differently) leaves it to this one.
 */
export const markCarriedScript = defineScript(
  'markCarried',
  1,
  `--[[
  KEYS[h] round h's outcome hash (HASH: call index → outcome JSON or running mark)
  ARGV[1] the carrying job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[2+h] the fields (call indexes) of round h's calls, comma-separated
  Per hash: one HMGET, one HSET of the empty fields, and the TTL when it marked any (the hash may
  be new; a hash already there is at most lengthened to the day it was written with).
  Returns how many fields were marked.
]]
local marked = 0
for h = 1, #KEYS do
  local fields = {}
  for f in string.gmatch(ARGV[2 + h], '[^,]+') do table.insert(fields, f) end
  local current = redis.call('HMGET', KEYS[h], unpack(fields))
  local set = {}
  for n = 1, #fields do
    if not current[n] then
      table.insert(set, fields[n])
      table.insert(set, ARGV[1])
    end
  end
  if #set > 0 then
    redis.call('HSET', KEYS[h], unpack(set))
    redis.call('PEXPIRE', KEYS[h], ARGV[2])
    marked = marked + #set / 2
  end
end
return marked
`,
  { moreKeys: true },
);

/** markCarried's reply as its header states it: how many calls were marked. */
export function parseMarkCarriedReply(reply: unknown): number {
  if (typeof reply === 'number' && Number.isInteger(reply) && reply >= 0) return reply;
  throw markCarriedScript.unexpectedReply('a count of marked calls', reply);
}

/** markCarried's keys and ARGV for a carrier's calls of `origin`'s rounds: one outcome hash per round, its calls' fields comma-separated. */
export function markCarriedInput(
  keys: RedisKeys,
  origin: string,
  carrier: { readonly id: string; readonly calls: readonly { readonly job: { round: string; callIndex: number } }[] },
): [string[], (string | number)[]] {
  const fields = new Map<string, string[]>();
  for (const c of carrier.calls) getOrCreate(fields, c.job.round, () => []).push(String(c.job.callIndex));
  const hashes = [...fields.keys()].map((round) => keys.outcomes(origin, round));
  return [hashes, [RUNNING_MARK + carrier.id, OUTCOME_TTL_MS, ...[...fields.values()].map((f) => f.join(','))]];
}
