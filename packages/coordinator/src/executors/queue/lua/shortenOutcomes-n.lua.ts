import { defineScript } from '../../../support/redis-client.js';

/**
 * Once rounds are committed: their outcome hashes (one coordinator's namespace, one hash slot)
 * live at most a little longer, instead of the day they were written with. One PEXPIRE a round's
 * hash, no PTTL first: a hash is noted once, when its round commits, hours before its day is out,
 * so the only key this could lengthen is one shortened already (a round committed twice), and
 * then by less than ARGV[1]; a key that is gone stays gone (PEXPIRE of no key is a no-op).
 */
export const shortenOutcomesScript = defineScript(
  'shortenOutcomes',
  1,
  `--[[
  KEYS[i] a committed round's outcome hash (HASH; may be gone)
  ARGV[1] TTL ms to set on each key
  Returns how many keys were there to cut.
]]
local cut = 0
for i = 1, #KEYS do
  cut = cut + redis.call('PEXPIRE', KEYS[i], ARGV[1])
end
return cut
`,
  { moreKeys: true },
);
