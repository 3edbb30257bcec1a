import type { AsyncRoundReply, SubmitRoundInput } from '../model.js';
import type { RoundCancels } from './round-cancels.js';
import { type RoundViewDeps, roundView } from './round-view.js';
import { beginSubmitted, type RoundsDeps } from './submit-round.js';

/** What an async submission needs beyond the rounds: their views, admission, and where a background failure is told. */
export interface AsyncRoundDeps {
  rounds: RoundsDeps;
  views: RoundViewDeps;
  /** Where the round's own cancel is kept (`Dispatcher.cancelRound`). */
  cancels: RoundCancels;
  /** TD_MAX_ROUNDS_IN_FLIGHT: waits for a place; the release is called once the round ends. */
  admit(): Promise<() => void>;
  /** A round that failed after the reply was sent (its retries are recovery's; this only reports). */
  onError(error: Error): void;
}

/**
 * (v1.3) `Prefer: respond-async`: the round begun (stored, so any coordinator answers for it) and
 * left to run; `running` at once, or `done` when its Idempotency-Key names a round that has ended.
 * A retry of a round still running elsewhere starts nothing here: its coordinator (or the one that
 * takes it over) finishes it. A refusal (no session, a key used for other calls) throws as usual.
 */
export async function submitRoundAsync(d: AsyncRoundDeps, input: SubmitRoundInput): Promise<AsyncRoundReply> {
  const release = await d.admit();
  let begun: Awaited<ReturnType<typeof beginSubmitted>>;
  let own: ReturnType<RoundCancels['register']> | undefined;
  try {
    // The round's own cancel: known before it begins (its start takes the signal), kept once it runs.
    begun = await beginSubmitted(d.rounds, input, (ref) => {
      own = d.cancels.register(ref);
      return input.cancel ? AbortSignal.any([input.cancel, own.signal]) : own.signal;
    });
  } catch (e) {
    release();
    throw e;
  }
  const { ref } = begun;
  if (begun.kind === 'existing') {
    release();
    const view = await roundView(d.views, ref);
    if (view?.status === 'done') return view;
    return { status: 'running', round: ref.round, run: ref.run };
  }
  // The round goes on as if the caller waited; nothing of the request (its signal) reaches it.
  const running = begun.run();
  own?.running(running);
  running.catch((e: unknown) => d.onError(e instanceof Error ? e : new Error(String(e)))).finally(release);
  return { status: 'running', round: ref.round, run: ref.run };
}
