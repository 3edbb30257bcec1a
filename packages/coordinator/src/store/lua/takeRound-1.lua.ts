import { defineScript } from '../../support/redis-client.js';

/** Moves a running round to a new owner (a takeover), fencing out the one before. */
export const takeRoundScript = defineScript(
  'takeRound',
  1,
  `--[[
  KEYS[1] the round (HASH: record, state, owner, origin, calls, planned)
  ARGV[1] the new owner
  Returns {"taken", calls JSON, planned JSON or false, origin}, where origin is the coordinator
  that began the round (kept as field origin from the first takeover on); {"done"} when the round
  is finished (done, or failed: given up); {"missing"} when there is no such round or it kept
  nothing to resume from.
]]
local r = redis.call('HMGET', KEYS[1], 'state', 'calls', 'planned', 'owner', 'origin')
if not r[1] then
  return {'missing'}
end
if r[1] == 'done' or r[1] == 'failed' then
  return {'done'}
end
if not r[2] then
  return {'missing'}
end
local origin = r[5] or r[4] or ''
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'origin', origin)
return {'taken', r[2], r[3], origin}
`,
);

/** How takeRound ends: the first element of its reply. */
export const TakeRoundStatus = { Taken: 'taken', Done: 'done', Missing: 'missing' } as const;
export type TakeRoundStatus = (typeof TakeRoundStatus)[keyof typeof TakeRoundStatus];

/** takeRound's reply, its shape checked; `calls` and `planned` are the round's JSON fields, undecoded. */
export type TakeRoundReply =
  | { status: typeof TakeRoundStatus.Taken; calls: string; planned: string | null; origin: string }
  | { status: typeof TakeRoundStatus.Done }
  | { status: typeof TakeRoundStatus.Missing };

/** takeRound's reply as its header states it, or an error naming the script and what came back. */
export function parseTakeRoundReply(reply: unknown): TakeRoundReply {
  if (Array.isArray(reply)) {
    const [status, calls, planned, origin]: readonly unknown[] = reply;
    if (reply.length === 1 && (status === TakeRoundStatus.Done || status === TakeRoundStatus.Missing)) {
      return { status };
    }
    if (
      reply.length === 4 &&
      status === TakeRoundStatus.Taken &&
      typeof calls === 'string' &&
      (planned === null || typeof planned === 'string') &&
      typeof origin === 'string'
    ) {
      return { status, calls, planned, origin };
    }
  }
  throw takeRoundScript.unexpectedReply('{"taken", calls, planned or nil, origin}, {"done"} or {"missing"}', reply);
}
