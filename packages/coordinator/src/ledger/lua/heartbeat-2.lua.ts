import { defineScript } from '../../support/redis-client.js';

/**
 * Lua: `inChunks(cmd, key, list, from)` runs cmd on key with list[from..] in chunks (unpack takes
 * a few thousand values at most). Shared by heartbeat and adopt.
 */
export const IN_CHUNKS_LUA = `
local function inChunks(cmd, key, list, from)
  for i = from, #list, 500 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 499, #list)))
  end
end
`;

/** A coordinator's heartbeat: its lease pushed back, and the rounds it finished off its list. */
export const heartbeatScript = defineScript(
  'heartbeat',
  2,
  `--[[
  KEYS[1] coordinators alive (ZSET id -> lease end, epoch ms)  KEYS[2] this coordinator's rounds (SET)
  ARGV[1] coordinator id  ARGV[2] lease end ms  ARGV[3] TTL ms of both keys
  ARGV[4..] members of finished rounds
  Returns 1.
]]
${IN_CHUNKS_LUA}
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
inChunks('SREM', KEYS[2], ARGV, 4)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`,
);

/** Checks heartbeat's reply, 1 as its header states; else an error naming the script and what came back. */
export function parseHeartbeatReply(reply: unknown): void {
  if (reply !== 1) throw heartbeatScript.unexpectedReply('1', reply);
}
