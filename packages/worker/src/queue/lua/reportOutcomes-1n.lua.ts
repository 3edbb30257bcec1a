import { defineScript, RESULTS_FIELD } from '@tool-dispatch/shared/redis';

/**
 * Records calls' outcomes once and sends them to the coordinator's results stream in one step,
 * when the outcome keys share the stream's hash tag (the coordinator that enqueued the calls
 * also reads their outcomes). The first outcome of a call stands, as in recordOutcomes.
 */
export const reportOutcomesScript = defineScript(
  'reportOutcomes',
  1,
  `--[[
  KEYS[1] the results stream (STREAM)  KEYS[1+i] fresh call i's outcome key (STRING)
  ARGV[1] the reporting job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[3] the stream's approximate MAXLEN  ARGV[4] the stream's TTL ms to set now, or 0 to leave it
  ARGV[3+2j] ARGV[4+2j] call j's id and outcome JSON: the fresh calls first (one per outcome key),
  then calls recorded before, only sent again.
  A fresh outcome is recorded when its key is empty or holds this job's running mark; a recorded
  outcome, or another job's mark, stands and the fresh one is not sent. The outcomes recorded now
  and those sent again go out as one stream entry of call id, outcome pairs (RESULTS_FIELD).
  Returns one integer per fresh call: 1 when recorded now, else 0.
]]
local fresh = #KEYS - 1
local out = {}
local fields = {}
-- One MGET for every fresh key's current value (a job carries at most TD_JOB_CALLS calls, 64 at most).
local current = {}
if fresh > 0 then
  current = redis.call('MGET', unpack(KEYS, 2))
end
for i = 1, fresh do
  local v = current[i]
  if not v or v == ARGV[1] then
    redis.call('SET', KEYS[1 + i], ARGV[4 + 2 * i], 'PX', ARGV[2])
    out[i] = 1
    table.insert(fields, '${RESULTS_FIELD.call}')
    table.insert(fields, ARGV[3 + 2 * i])
    table.insert(fields, '${RESULTS_FIELD.outcome}')
    table.insert(fields, ARGV[4 + 2 * i])
  else
    out[i] = 0
  end
end
for j = fresh + 1, (#ARGV - 4) / 2 do
  table.insert(fields, '${RESULTS_FIELD.call}')
  table.insert(fields, ARGV[3 + 2 * j])
  table.insert(fields, '${RESULTS_FIELD.outcome}')
  table.insert(fields, ARGV[4 + 2 * j])
end
if #fields > 0 then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', unpack(fields))
  if ARGV[4] ~= '0' then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
  end
end
return out
`,
  { moreKeys: true },
);

/** reportOutcomes's reply as its header states it: per fresh call, whether its outcome was recorded (and sent) now. */
export function parseReportOutcomesReply(reply: unknown): boolean[] {
  if (Array.isArray(reply) && reply.every((v) => v === 1 || v === 0)) return reply.map((v) => v === 1);
  throw reportOutcomesScript.unexpectedReply('a list of 1 or 0, one per fresh call', reply);
}
