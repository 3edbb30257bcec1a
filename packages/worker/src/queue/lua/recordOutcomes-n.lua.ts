import { defineScript } from '@tool-dispatch/shared/redis';

/** Records calls' outcomes once: the first outcome of a call stands (a late or repeated report changes nothing). */
export const recordOutcomesScript = defineScript(
  'recordOutcomes',
  1,
  `--[[
  KEYS[i] call i's outcome key (STRING)
  ARGV[1] the reporting job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[2+i] call i's outcome JSON
  A key that is empty or holds this job's running mark takes the outcome; a recorded outcome,
  or another job's mark, stands. Returns one integer per call: 1 when recorded now, else 0.
]]
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if not v or v == ARGV[1] then
    redis.call('SET', KEYS[i], ARGV[2 + i], 'PX', ARGV[2])
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
return out
`,
  { moreKeys: true },
);

/** recordOutcomes's reply as its header states it: per call, whether its outcome was recorded now. */
export function parseRecordOutcomesReply(reply: unknown): boolean[] {
  if (Array.isArray(reply) && reply.every((v) => v === 1 || v === 0)) return reply.map((v) => v === 1);
  throw recordOutcomesScript.unexpectedReply('a list of 1 or 0, one per call', reply);
}
