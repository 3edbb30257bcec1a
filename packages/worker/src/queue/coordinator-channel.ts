import type { InputRequester } from '@tool-dispatch/shared';
import {
  type AnswerMessage,
  type AskMessage,
  askFields,
  type CancelMessage,
  parseInputReply,
  RESULTS_STREAM_MAXLEN,
  type RedisClient,
  type RedisKeys,
  tryParseJson,
} from '@tool-dispatch/shared/redis';
import type { Questions } from './questions.js';
import type { RunningCalls } from './running-calls.js';

/** What the channel needs: Redis for questions, a subscriber for cancels and answers, and whom they reach. */
export interface CoordinatorChannelContext {
  readonly redis: RedisClient;
  /** A connection of its own, in subscriber mode once `listen` is called. */
  readonly subscriber: RedisClient;
  readonly keys: RedisKeys;
  /** Calls running here: a cancel aborts the one it names. */
  readonly running: RunningCalls;
  /** Questions waiting: an answer resolves the one it names. */
  readonly questions: Questions;
}

/** A call that may ask: its id, and the namespace of its answer key. */
export interface AskingCall {
  readonly callId: string;
  readonly origin: string;
}

/**
 * The worker's side of talking with coordinators beyond the queue: cancels and answers heard on
 * their channels, and a running call's questions (an MCP elicitation) sent on its coordinator's
 * results stream.
 */
export class CoordinatorChannel {
  constructor(private readonly context: CoordinatorChannelContext) {}

  /** Subscribes to the cancel and answer channels; resolves once subscribed. */
  async listen(): Promise<void> {
    const { subscriber, keys } = this.context;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.answerChannel()) this.onAnswer(message);
      else if (channel === keys.cancelChannel()) this.onCancel(message);
    });
    await subscriber.subscribe(keys.cancelChannel(), keys.answerChannel());
  }

  /**
   * A call's question asker: the question goes to the coordinator waiting for the call, on its
   * results stream (`replyTo`), and the answer comes back on the answer channel.
   */
  askerFor(replyTo: string, call: AskingCall): InputRequester {
    const { redis, questions } = this.context;
    let asked = 0;
    return async function askCoordinator(request, signal) {
      asked += 1;
      const answer = questions.wait(call.origin, call.callId, asked, signal);
      const question: AskMessage = { n: asked, request };
      await redis.xadd(replyTo, 'MAXLEN', '~', RESULTS_STREAM_MAXLEN, '*', ...askFields(call.callId, question));
      return answer;
    };
  }

  private onAnswer(message: string): void {
    const answer = tryParseJson(message) as AnswerMessage | undefined;
    if (!answer || typeof answer.callId !== 'string' || !Number.isInteger(answer.n)) return;
    const reply = parseInputReply(answer.reply);
    if (reply) this.context.questions.deliver({ callId: answer.callId, n: answer.n, reply });
  }

  private onCancel(message: string): void {
    const cancel = tryParseJson(message) as CancelMessage | undefined;
    if (!cancel || typeof cancel.callId !== 'string') return;
    this.context.running.abort(cancel.callId, new Error('cancelled by the coordinator'));
  }
}
