import { defineScript } from '../../support/redis-client.js';

/** Claims one pending confirmation for a person's answer, by confirmationId or by an unambiguous callId. */
export const answerConfirmScript = defineScript(
  'answerConfirm',
  2,
  `--[[
  KEYS[1] pending (HASH confirmationId -> PendingConfirmation JSON)
  KEYS[2] decided (HASH confirmationId -> Decision JSON)
  ARGV[1] confirmationId or callId  ARGV[2] decision JSON  ARGV[3] decided TTL ms
  Returns {"answered", <confirmation JSON>}, {"not_found"} or {"ambiguous", <count>}.
]]
local id = ARGV[1]
local item = redis.call('HGET', KEYS[1], id)
if not item then
  local matches = {}
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    if cjson.decode(all[i + 1]).callId == ARGV[1] then
      table.insert(matches, all[i])
    end
  end
  if #matches > 1 then
    return {'ambiguous', #matches}
  end
  if #matches == 0 then
    return {'not_found'}
  end
  id = matches[1]
  item = redis.call('HGET', KEYS[1], id)
end
redis.call('HDEL', KEYS[1], id)
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {'answered', item}
`,
);

/** How answerConfirm ends: the first element of its reply. */
export const AnswerConfirmStatus = { Answered: 'answered', NotFound: 'not_found', Ambiguous: 'ambiguous' } as const;
export type AnswerConfirmStatus = (typeof AnswerConfirmStatus)[keyof typeof AnswerConfirmStatus];

/** answerConfirm's reply, its shape checked; `confirmation` is the claimed entry's JSON, undecoded. */
export type AnswerConfirmReply =
  | { status: typeof AnswerConfirmStatus.Answered; confirmation: string }
  | { status: typeof AnswerConfirmStatus.NotFound }
  /** `count`: the pending confirmations of that callId (2 or more). */
  | { status: typeof AnswerConfirmStatus.Ambiguous; count: number };

/** answerConfirm's reply as its header states it, or an error naming the script and what came back. */
export function parseAnswerConfirmReply(reply: unknown): AnswerConfirmReply {
  if (Array.isArray(reply)) {
    const [status, value]: readonly unknown[] = reply;
    if (reply.length === 1 && status === AnswerConfirmStatus.NotFound) return { status };
    if (reply.length === 2 && status === AnswerConfirmStatus.Answered && typeof value === 'string') {
      return { status, confirmation: value };
    }
    if (
      reply.length === 2 &&
      status === AnswerConfirmStatus.Ambiguous &&
      typeof value === 'number' &&
      Number.isSafeInteger(value) &&
      value > 1
    ) {
      return { status, count: value };
    }
  }
  throw answerConfirmScript.unexpectedReply(
    '{"answered", <confirmation JSON>}, {"not_found"} or {"ambiguous", <count of 2 or more>}',
    reply,
  );
}
