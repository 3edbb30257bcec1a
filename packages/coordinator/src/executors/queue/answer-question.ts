import type { InputReply } from '@tool-dispatch/shared';
import {
  type AnswerMessage,
  type AskMessage,
  OUTCOME_TTL_MS,
  type RedisClient,
  type RedisKeys,
} from '@tool-dispatch/shared/redis';
import type { Pending } from './pending.js';

/** What answering a question needs: Redis, the key layout, and whose namespace is the default. */
export interface AnswerContext {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly coordinatorId: string;
}

/**
 * A question a running call asked (ResultsReader.onAsk): parked through the call's asker, its
 * answer written beside the call's outcome field and published to the workers. A call with no
 * asker here (`entry` undefined: not waiting on this coordinator; or not one that may ask) is
 * answered that nobody can. The time the question waits is kept off the call's deadline.
 */
export async function answerQuestion(
  context: AnswerContext,
  entry: Pending | undefined,
  callId: string,
  question: AskMessage,
): Promise<void> {
  let reply: InputReply;
  if (!entry?.requestInput) reply = { error: 'nobody can answer questions of this call' };
  else {
    const asked = Date.now();
    entry.asking++;
    try {
      reply = await entry.requestInput(question.request, entry.signal);
    } finally {
      entry.asking--;
      entry.askedMs += Date.now() - asked;
    }
  }
  const origin = entry?.origin ?? context.coordinatorId;
  const message: AnswerMessage = { callId, n: question.n, reply };
  await context.redis
    .multi()
    .set(context.keys.answer(origin, callId, question.n), JSON.stringify(reply), 'PX', OUTCOME_TTL_MS)
    .publish(context.keys.answerChannel(), JSON.stringify(message))
    .exec();
}
