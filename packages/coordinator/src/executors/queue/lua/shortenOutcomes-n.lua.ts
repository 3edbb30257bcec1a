import { defineScript } from '../../../support/redis-client.js';

/**
 * Once rounds are committed: their calls' outcome keys (one coordinator's namespace, one hash
 * slot) live at most a little longer, instead of the day they were written with.
 */
export const shortenOutcomesScript = defineScript(
  'shortenOutcomes',
  1,
  `--[[
  KEYS[i] a committed call's outcome key (STRING; may be gone)
  ARGV[1] TTL ms to cut each key's TTL down to (never lengthened)
  Returns how many TTLs were cut.
]]
local ttl = tonumber(ARGV[1])
local cut = 0
for i = 1, #KEYS do
  local left = redis.call('PTTL', KEYS[i])
  if left > ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
    cut = cut + 1
  end
end
return cut
`,
  { moreKeys: true },
);
