import { defineScript, RECORD_FIRST_LUA } from '@tool-dispatch/shared/redis';

/** Records calls' outcomes once: the first outcome of a call stands (a late or repeated report changes nothing). */
export const recordOutcomesScript = defineScript(
  'recordOutcomes',
  1,
  `--[[
  KEYS[h] round h's outcome hash (HASH: call index → outcome JSON or running mark)
  ARGV[1] the reporting job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  ARGV[3j] ARGV[3j+1] ARGV[3j+2] call j's hash (h, 1-based), field and outcome JSON
  A field that is empty or holds this job's running mark takes the outcome; a recorded outcome,
  or another job's mark, stands (recordFirst). Returns one integer per call: 1 when recorded
  now, else 0.
]]
${RECORD_FIRST_LUA}
return recordEach(0, #KEYS, 3, 3, 2, (#ARGV - 2) / 3, ARGV[1], ARGV[2])
`,
  { moreKeys: true },
);

/** recordOutcomes's reply as its header states it: per call, whether its outcome was recorded now. */
export function parseRecordOutcomesReply(reply: unknown): boolean[] {
  if (Array.isArray(reply) && reply.every((v) => v === 1 || v === 0)) return reply.map((v) => v === 1);
  throw recordOutcomesScript.unexpectedReply('a list of 1 or 0, one per call', reply);
}
