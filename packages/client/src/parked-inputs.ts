import { TdApiError } from './errors.js';
import type { InputAnswer, ParkedInput, TdEvent } from './types.js';

/** What `answerParkedInputs` needs of the client. */
interface InputsClient {
  inputs(session: string, options: { signal?: AbortSignal }): Promise<ParkedInput[]>;
  answerInput(
    session: string,
    idOrCallId: string,
    answer: InputAnswer,
    options: { signal?: AbortSignal },
  ): Promise<unknown>;
  events(session: string, options: { signal?: AbortSignal }): AsyncIterable<TdEvent>;
}

interface Watch {
  session: string;
  run: string;
  /** The round's call ids: its parked calls are those of `run` with one of them. */
  callIds: ReadonlySet<string>;
  onInput: (input: ParkedInput) => InputAnswer | Promise<InputAnswer>;
  /** Stops the watch (the round answered). */
  signal: AbortSignal;
  pollIntervalMs: number;
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });

/**
 * Answers the parked calls of one round through `onInput` until `signal` aborts: each heard from
 * `input.requested` or found by a poll of `inputs()`, answered once. An answer the coordinator
 * refused (400: outside ask_user's choices) or could not take (a dropped connection) is asked
 * again at the next poll; one answered meanwhile (404) is left alone.
 */
export async function answerParkedInputs(client: InputsClient, watch: Watch): Promise<void> {
  const { signal } = watch;
  const handled = new Set<string>();
  const answering = new Set<Promise<void>>();
  const take = (input: ParkedInput) => {
    if (signal.aborted || input.run !== watch.run || !watch.callIds.has(input.callId)) return;
    if (handled.has(input.inputId)) return;
    handled.add(input.inputId);
    const p = answerOne(client, watch, input).then((settled) => {
      if (!settled) handled.delete(input.inputId);
    });
    answering.add(p);
    void p.finally(() => answering.delete(p));
  };
  const fromEvents = (async function listenForInputs() {
    for await (const e of client.events(watch.session, { signal })) if (e.name === 'input.requested') take(e.data);
  })().catch(() => undefined);
  const byPolling = (async function pollInputs() {
    while (!signal.aborted) {
      for (const input of await client.inputs(watch.session, { signal }).catch(() => [])) take(input);
      await pause(watch.pollIntervalMs, signal);
    }
  })();
  await Promise.all([fromEvents, byPolling]);
  await Promise.allSettled([...answering]);
}

/** Asks `onInput` and posts its answer; false when it should be asked again. */
async function answerOne(client: InputsClient, watch: Watch, input: ParkedInput): Promise<boolean> {
  let answer: InputAnswer;
  try {
    answer = await watch.onInput(input);
  } catch (e) {
    answer = { error: e instanceof Error ? e.message : String(e) };
  }
  try {
    await client.answerInput(watch.session, input.inputId, answer, { signal: watch.signal });
    return true;
  } catch (e) {
    return e instanceof TdApiError && e.status === 404;
  }
}
