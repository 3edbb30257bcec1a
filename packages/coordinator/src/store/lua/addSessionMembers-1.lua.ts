import { defineScript } from '../../support/redis-client.js';

/** Adds names to a session's fetched or auto-approve list, keeping first-insertion order. */
export const addSessionMembersScript = defineScript(
  'addSessionMembers',
  1,
  `--[[
  KEYS[1] session (HASH: "state", "seq", "f:<tool>" fetched, "a:<tool>" auto-approved, "all")
  ARGV[1] field prefix ("f:" or "a:")  ARGV[2] TTL ms  ARGV[3..] names
  A missing session is left alone; "a:" is a no-op when the session auto-approves all.
  Returns the number of names added.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == 'a:' and redis.call('HEXISTS', KEYS[1], 'all') == 1 then
  return 0
end
local added = 0
for i = 3, #ARGV do
  local field = ARGV[1] .. ARGV[i]
  if redis.call('HEXISTS', KEYS[1], field) == 0 then
    redis.call('HSET', KEYS[1], field, redis.call('HINCRBY', KEYS[1], 'seq', 1))
    added = added + 1
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return added
`,
);

/** addSessionMembers's reply as its header states it: the number of names added. */
export function parseAddSessionMembersReply(reply: unknown): number {
  if (typeof reply === 'number' && Number.isSafeInteger(reply) && reply >= 0) return reply;
  throw addSessionMembersScript.unexpectedReply('a count (an integer of 0 or more)', reply);
}
