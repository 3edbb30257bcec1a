import type { InputReply } from '@tool-dispatch/shared';
import {
  type AnswerMessage,
  parseInputReply,
  type RedisClient,
  type RedisKeys,
  tryParseJson,
} from '@tool-dispatch/shared/redis';

/** How often a waiting question looks for its answer key, in case the answer's message was missed. */
const ANSWER_POLL_MS = 1_000;

interface Waiter {
  resolve(reply: InputReply): void;
}

/**
 * Questions running calls of this worker asked and wait to hear answered (an MCP elicitation):
 * an answer arrives on the answer channel (`deliver`), or is found under its answer key by a
 * poll (a message missed while the subscriber reconnected); a call stopped meanwhile ends the wait.
 */
export class Questions {
  private readonly waiting = new Map<string, Waiter>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** Waits for the answer to call `callId`'s `n`th question (in the namespace of `origin`); `signal` ends the wait. */
  wait(origin: string, callId: string, n: number, signal: AbortSignal): Promise<InputReply> {
    const id = `${callId}\u0000${n}`;
    return new Promise<InputReply>((resolve) => {
      let poll: NodeJS.Timeout | undefined;
      const done = (reply: InputReply) => {
        if (this.waiting.get(id) !== waiter) return;
        this.waiting.delete(id);
        clearInterval(poll);
        signal.removeEventListener('abort', onAbort);
        resolve(reply);
      };
      const waiter: Waiter = { resolve: done };
      const onAbort = () => done({ error: 'the call stopped while its question waited' });
      this.waiting.set(id, waiter);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      poll = setInterval(() => {
        this.redis
          .get(this.keys.answer(origin, callId, n))
          .then((value) => {
            const reply = parseInputReply(tryParseJson(value));
            if (reply) done(reply);
          })
          .catch(() => undefined);
      }, ANSWER_POLL_MS);
    });
  }

  /** An answer message from the answer channel: the question waiting for it here hears it. */
  deliver(message: AnswerMessage): void {
    this.waiting.get(`${message.callId}\u0000${message.n}`)?.resolve(message.reply);
  }

  /** Questions waiting (metrics, tests). */
  get size(): number {
    return this.waiting.size;
  }
}
