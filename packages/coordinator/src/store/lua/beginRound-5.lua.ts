import { APPEND_EVENTS_LUA } from '../../support/event-stream.js';
import { defineScript } from '../../support/redis-client.js';

/** Starts a round of an existing session, claiming its idempotency key atomically with creating the round record. */
export const beginRoundScript = defineScript(
  'beginRound',
  5,
  `--[[
  Starts a round under an idempotency key, or reports the round that already holds the key.
  KEYS[1] the new round (HASH)  KEYS[2] idempotency key (STRING "<round>|<callsHash>")
  KEYS[3] session (HASH; read, and its TTL pushed back when ARGV[12] is "1")
  ARGV[1] round id  ARGV[2] calls hash  ARGV[3] record JSON  ARGV[4] TTL ms
  ARGV[5] "1" when an idempotency key is used
  ARGV[6] the coordinator running the round ("" for none)  ARGV[7] the round's calls as JSON ("" for none),
  kept (as fields owner and calls) so another coordinator can take the round over
  KEYS[4] the session's events (STREAM)  ARGV[8] MINID  ARGV[9] events TTL ms  ARGV[10] "1" to push the TTL back
  ARGV[11] round.started data JSON ("" to append no event)
  KEYS[5] the run's dedupe entries (HASH)
  KEYS[6] KEYS[7] (v1.3, with places) the run limit's held places (ZSET ticket -> lease end) and waiters (ZSET)
  ARGV[12] "1" to push the session's TTL back (the caller does it at most so often per session,
    well within the TTL: "0" leaves it as a recent begin set it)
  ARGV[13] the run's places in all  ARGV[14] a place's lease ms  ARGV[15] the limit keys' TTL ms
  ARGV[16] k, the places asked for (0: none)  ARGV[17..16+k] their tickets
  ARGV[17+k..] dedupe keys pass 1 will look up
  The places are taken (each ticket held under a lease, server clock) only when none waits and
  all k are free; else nothing of the limit is touched and the calls ask for them one by one.
  Returns {"new", <session HGETALL>, <HMGET of the dedupe keys>, 1 | 0 (the places taken)},
  {"existing" | "conflict", <round id holding the key>}, or {"no_session"} (nothing written)
  when the session does not exist.
  Idempotent: run again for the same round (ioredis resends a command whose reply a dropped
  connection lost), it writes nothing more and answers "new" again, not "existing" for its own round.
]]
${APPEND_EVENTS_LUA}
local session = redis.call('HGETALL', KEYS[3])
if #session == 0 then
  return {'no_session'}
end
local places = tonumber(ARGV[16])
local dedupeFrom = 17 + places
local function dedupeFound()
  if #ARGV >= dedupeFrom then
    return redis.call('HMGET', KEYS[5], unpack(ARGV, dedupeFrom))
  end
  return {}
end
-- Most rounds find the limit's keys gone (the last round gave every place back): one EXISTS.
local function takePlaces()
  if places == 0 then
    return 0
  end
  local held, wait = KEYS[6], KEYS[7]
  if redis.call('EXISTS', held, wait) > 0 then
    if redis.call('EXISTS', wait) == 1 or redis.call('ZCARD', held) + places > tonumber(ARGV[13]) then
      return 0
    end
  end
  local t = redis.call('TIME')
  local leaseEnd = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[14])
  local members = {}
  for i = 17, 16 + places do
    members[#members + 1] = leaseEnd
    members[#members + 1] = ARGV[i]
  end
  redis.call('ZADD', held, unpack(members))
  redis.call('PEXPIRE', held, ARGV[15])
  return 1
end
-- Round ids are new for each submission: a record under this one is this very call, run before.
-- Most rounds find no key at all: one EXISTS (HEXISTS, and DEL of fields left without a record, only when there is one).
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HEXISTS', KEYS[1], 'record') == 1 then
    local took = 0
    if places > 0 and redis.call('ZSCORE', KEYS[6], ARGV[17]) then
      took = 1
    end
    return {'new', session, dedupeFound(), took}
  end
  redis.call('DEL', KEYS[1])
end
if ARGV[5] == '1' then
  local held = redis.call('GET', KEYS[2])
  if held then
    local sep = string.find(held, '|', 1, true)
    local round = string.sub(held, 1, sep - 1)
    local hash = string.sub(held, sep + 1)
    if hash == ARGV[2] then
      return {'existing', round}
    end
    return {'conflict', round}
  end
  redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[4])
end
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 'record', ARGV[3], 'state', 'running', 'owner', ARGV[6], 'calls', ARGV[7])
else
  redis.call('HSET', KEYS[1], 'record', ARGV[3], 'state', 'running')
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if ARGV[12] == '1' then
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
if ARGV[11] ~= '' then
  appendEvent(KEYS[4], ARGV[8], 'round.started', ARGV[11])
  keepEvents(KEYS[4], ARGV[9], ARGV[10])
end
return {'new', session, dedupeFound(), takePlaces()}
`,
  { moreKeys: true },
);

/** How beginRound ends: the first element of its reply. */
export const BeginRoundStatus = {
  New: 'new',
  Existing: 'existing',
  Conflict: 'conflict',
  NoSession: 'no_session',
} as const;
export type BeginRoundStatus = (typeof BeginRoundStatus)[keyof typeof BeginRoundStatus];

/** beginRound's reply, its shape checked; the session and dedupe entries are left for the caller to decode. */
export type BeginRoundReply =
  | {
      status: typeof BeginRoundStatus.New;
      /** The session's HGETALL: field, value, field, value… (never empty). */
      session: string[];
      /** The run's dedupe entries (JSON) under the dedupe keys asked for, in order; null where none. */
      dedupe: (string | null)[];
      /** Whether the run's places asked for were taken. */
      placesTaken: boolean;
    }
  /** `round`: the round holding the idempotency key. */
  | { status: typeof BeginRoundStatus.Existing | typeof BeginRoundStatus.Conflict; round: string }
  | { status: typeof BeginRoundStatus.NoSession };

/** beginRound's reply as its header states it, or an error naming the script and what came back. */
export function parseBeginRoundReply(reply: unknown): BeginRoundReply {
  if (Array.isArray(reply)) {
    const [status, detail, found]: readonly unknown[] = reply;
    if (reply.length === 1 && status === BeginRoundStatus.NoSession) return { status };
    if (
      reply.length === 2 &&
      (status === BeginRoundStatus.Existing || status === BeginRoundStatus.Conflict) &&
      typeof detail === 'string'
    ) {
      return { status, round: detail };
    }
    const took: unknown = reply[3];
    if (
      reply.length === 4 &&
      status === BeginRoundStatus.New &&
      isFieldList(detail) &&
      isEntryList(found) &&
      (took === 0 || took === 1)
    ) {
      return { status, session: detail, dedupe: found, placesTaken: took === 1 };
    }
  }
  throw beginRoundScript.unexpectedReply(
    '{"new", <session fields>, <dedupe entries>, 1 | 0}, {"existing" | "conflict", <round id>} or {"no_session"}',
    reply,
  );
}

function isFieldList(value: unknown): value is string[] {
  return (
    Array.isArray(value) && value.length > 0 && value.length % 2 === 0 && value.every((v) => typeof v === 'string')
  );
}

function isEntryList(value: unknown): value is (string | null)[] {
  return Array.isArray(value) && value.every((v) => v === null || typeof v === 'string');
}
