import { defineScript } from '../../../support/redis-client.js';

/**
 * Before a job of concurrent calls is added: each call's outcome key names the job carrying it
 * (the running mark a worker would set), unless it holds something already. A worker taking the
 * job on its first delivery then starts the calls without a check of its own, and another job
 * carrying one of them (a takeover grouping calls differently) leaves it to this one.
 */
export const markCarriedScript = defineScript(
  'markCarried',
  1,
  `--[[
  KEYS[i] call i's outcome key (STRING)
  ARGV[1] the carrying job's running mark ("running <job id>")  ARGV[2] outcome TTL ms
  Returns how many keys were marked.
]]
local marked = 0
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    marked = marked + 1
  end
end
return marked
`,
  { moreKeys: true },
);
