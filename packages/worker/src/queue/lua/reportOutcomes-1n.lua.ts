import { defineScript, RECORD_FIRST_LUA, RESULTS_FIELD } from '@tool-dispatch/shared/redis';

/**
 * Records calls' outcomes once and sends them to the coordinator's results stream in one step,
 * when the outcome hashes share the stream's hash tag (the coordinator that enqueued the calls
 * also reads their outcomes). The first outcome of a call stands, as in recordOutcomes.
 */
export const reportOutcomesScript = defineScript(
  'reportOutcomes',
  1,
  `--[[
  KEYS[1] the results stream (STREAM)  KEYS[1+h] round h's outcome hash (HASH: call index →
  outcome JSON or running mark)
  ARGV[1] the reporting job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[3] the stream's approximate MAXLEN  ARGV[4] the stream's TTL ms to set now, or 0 to leave it
  ARGV[5] F, the number of fresh calls; ARGV[6+4(j-1)] .. ARGV[9+4(j-1)] fresh call j's hash (h,
  1-based), field, call id and outcome JSON; after them ARGV pairs of call id and outcome JSON of
  calls recorded before, only sent again.
  A fresh outcome is recorded when its field is empty or holds this job's running mark; a recorded
  outcome, or another job's mark, stands and the fresh one is not sent (recordFirst). The outcomes
  recorded now and those sent again go out as one stream entry of call id, outcome pairs
  (RESULTS_FIELD). Returns one integer per fresh call: 1 when recorded now, else 0.
]]
${RECORD_FIRST_LUA}
local fresh = tonumber(ARGV[5])
local out = {}
if fresh > 0 then
  out = recordEach(1, #KEYS - 1, 6, 4, 3, fresh, ARGV[1], ARGV[2])
end
local fields = {}
for j = 1, fresh do
  if out[j] == 1 then
    local b = 6 + 4 * (j - 1)
    table.insert(fields, '${RESULTS_FIELD.call}')
    table.insert(fields, ARGV[b + 2])
    table.insert(fields, '${RESULTS_FIELD.outcome}')
    table.insert(fields, ARGV[b + 3])
  end
end
for b = 6 + 4 * fresh, #ARGV - 1, 2 do
  table.insert(fields, '${RESULTS_FIELD.call}')
  table.insert(fields, ARGV[b])
  table.insert(fields, '${RESULTS_FIELD.outcome}')
  table.insert(fields, ARGV[b + 1])
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
