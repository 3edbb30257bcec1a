import { defineScript } from '@tool-dispatch/shared/redis';

/**
 * Before a job runs its calls: which to run, which were cancelled, which already have an
 * outcome (so no call runs twice), and which another job is running.
 */
export const startCallsScript = defineScript(
  'startCalls',
  3,
  `--[[
  KEYS[h] round h's outcome hash (HASH: call index → outcome JSON or running mark), h = 1..ARGV[3]
  KEYS[m+2c-1] call c's cancel mark (STRING)  KEYS[m+2c] call c's outcome key of before v1.3
  (STRING, only read: an older worker's outcome or mark), m = ARGV[3]
  ARGV[1] this job's running mark ("running <job id>")  ARGV[2] outcome TTL ms  ARGV[3] m
  ARGV[2+2c] ARGV[3+2c] call c's hash (h) and field
  Returns one reply per call: the recorded outcome JSON; "cancelled"; "run" (marked running by
  this job now); "again" (marked running by this job already: a delivery before this one started
  it, its outcome unknown); "elsewhere <job id>" (another job's running mark, naming that job).
]]
local m = tonumber(ARGV[3])
local out = {}
local written = {}
for c = 1, (#KEYS - m) / 2 do
  local hash = KEYS[tonumber(ARGV[2 + 2 * c])]
  local field = ARGV[3 + 2 * c]
  local v = redis.call('HGET', hash, field)
  if not v then v = redis.call('GET', KEYS[m + 2 * c]) end
  local running = v and string.sub(v, 1, 8) == 'running '
  if v and not running then
    table.insert(out, v)
  elseif redis.call('EXISTS', KEYS[m + 2 * c - 1]) == 1 then
    table.insert(out, 'cancelled')
  elseif not v then
    redis.call('HSET', hash, field, ARGV[1])
    written[hash] = true
    table.insert(out, 'run')
  elseif v == ARGV[1] then
    table.insert(out, 'again')
  else
    table.insert(out, 'elsewhere ' .. string.sub(v, 9))
  end
end
for h = 1, m do
  if written[KEYS[h]] then redis.call('PEXPIRE', KEYS[h], ARGV[2]) end
end
return out
`,
  { moreKeys: true },
);

/** What startCalls says of a call with no outcome recorded: the tags of its reply. */
export const StartCallsStatus = { Run: 'run', Again: 'again', Cancelled: 'cancelled', Elsewhere: 'elsewhere' } as const;
export type StartCallsStatus = (typeof StartCallsStatus)[keyof typeof StartCallsStatus];

/** One call's start: a tag, or the outcome recorded before (its JSON, undecoded). */
export type StartCallReply = StartCallsStatus | { recorded: string };

/** One call's start as the script says it: a tag, the outcome recorded before, or the other job whose running mark it holds. */
export type StartCallsScriptReply = Exclude<StartCallReply, typeof StartCallsStatus.Elsewhere> | { elsewhere: string };

const ELSEWHERE_PREFIX = `${StartCallsStatus.Elsewhere} `;

/** startCalls's reply as its header states it, one per call, or an error naming the script and what came back. */
export function parseStartCallsReply(reply: unknown): StartCallsScriptReply[] {
  if (Array.isArray(reply) && reply.every((v): v is string => typeof v === 'string')) {
    return reply.map(toStartCallReply);
  }
  throw startCallsScript.unexpectedReply(
    'a list of "run", "again", "cancelled", "elsewhere <job id>" or outcome JSON',
    reply,
  );
}

function toStartCallReply(value: string): StartCallsScriptReply {
  if (value === StartCallsStatus.Run || value === StartCallsStatus.Again || value === StartCallsStatus.Cancelled)
    return value;
  if (value.startsWith(ELSEWHERE_PREFIX)) return { elsewhere: value.slice(ELSEWHERE_PREFIX.length) };
  return { recorded: value };
}
