import { defineScript } from './script.js';

/** DESIGN.md pass 3: commit is idempotent. Claims (round, callIndex) and appends the entry once. */
export const recordResultScript = defineScript(
  'recordResult',
  4,
  `--[[
  Records a committed call's result unless that call was committed before.
  KEYS[1] committed claims (SET)    KEYS[2] session history (LIST)
  KEYS[3] the tool's history (LIST) KEYS[4] session (HASH; only its TTL is refreshed)
  ARGV[1] claim "<round>|<callIndex>"  ARGV[2] entry JSON  ARGV[3] TTL ms
  Returns 1 when recorded, 0 when already committed.
]]
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('RPUSH', KEYS[3], ARGV[2])
for i = 1, 4 do
  redis.call('PEXPIRE', KEYS[i], ARGV[3])
end
return 1
`,
);
