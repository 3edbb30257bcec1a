import { defineScript } from '@tool-dispatch/shared/redis';

/**
 * Before a job runs its calls: which to run, which were cancelled, which already have an
 * outcome (so no call runs twice), and which another job is running.
 */
export const startCallsScript = defineScript(
  'startCalls',
  2,
  `--[[
  KEYS[2i-1] call i's cancel mark (STRING)  KEYS[2i] call i's outcome key (STRING)
  ARGV[1] this job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  Returns one reply per call: the recorded outcome JSON; "cancelled"; "run" (marked running by
  this job now); "again" (marked running by this job already: a delivery before this one started
  it, its outcome unknown); "elsewhere" (another job's running mark).
]]
local out = {}
for i = 1, #KEYS, 2 do
  local v = redis.call('GET', KEYS[i + 1])
  local running = v and string.sub(v, 1, 8) == 'running '
  if v and not running then
    table.insert(out, v)
  elseif redis.call('EXISTS', KEYS[i]) == 1 then
    table.insert(out, 'cancelled')
  elseif not v then
    redis.call('SET', KEYS[i + 1], ARGV[1], 'PX', ARGV[2])
    table.insert(out, 'run')
  elseif v == ARGV[1] then
    table.insert(out, 'again')
  else
    table.insert(out, 'elsewhere')
  end
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

/** startCalls's reply as its header states it, one per call, or an error naming the script and what came back. */
export function parseStartCallsReply(reply: unknown): StartCallReply[] {
  if (Array.isArray(reply) && reply.every((v): v is string => typeof v === 'string')) {
    return reply.map(toStartCallReply);
  }
  throw startCallsScript.unexpectedReply('a list of "run", "again", "cancelled", "elsewhere" or outcome JSON', reply);
}

function toStartCallReply(value: string): StartCallReply {
  const isTag =
    value === StartCallsStatus.Run ||
    value === StartCallsStatus.Again ||
    value === StartCallsStatus.Cancelled ||
    value === StartCallsStatus.Elsewhere;
  return isTag ? value : { recorded: value };
}
