import { defineScript } from '@tool-dispatch/shared';

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
  this job now, or already, when this job is retried after its worker died); "elsewhere" (another
  job's running mark).
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
    table.insert(out, 'run')
  else
    table.insert(out, 'elsewhere')
  end
end
return out
`,
  { moreKeys: true },
);
