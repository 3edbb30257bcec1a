import type { RoundRef, RoundResponse } from '../model.js';

interface Cancellable {
  controller: AbortController;
  promise: Promise<RoundResponse>;
}

const keyOf = (ref: RoundRef) => `${ref.session}\u0000${ref.run}\u0000${ref.round}`;

/**
 * (v1.3) The rounds of this coordinator that can be cancelled one by one (`Dispatcher.cancelRound`):
 * those submitted with a signal of their own (async rounds), while they run here.
 */
export class RoundCancels {
  private readonly rounds = new Map<string, Cancellable>();

  /** A signal of the round's own, for its start; `running` registers the round's promise once started. */
  register(ref: RoundRef): { signal: AbortSignal; running: (promise: Promise<RoundResponse>) => void } {
    const controller = new AbortController();
    const key = keyOf(ref);
    return {
      signal: controller.signal,
      running: (promise) => {
        this.rounds.set(key, { controller, promise });
        const forget = () => {
          if (this.rounds.get(key)?.controller === controller) this.rounds.delete(key);
        };
        promise.then(forget, forget);
      },
    };
  }

  /** Cancels the round if it runs here, and waits for it: the number of its calls that ended cancelled. */
  async cancel(ref: RoundRef): Promise<number> {
    const kept = this.rounds.get(keyOf(ref));
    if (!kept) return 0;
    kept.controller.abort(new Error('round cancelled'));
    const response = await kept.promise.catch(() => undefined);
    return response?.results.filter((r) => r.status === 'error' && r.error?.code === 'cancelled').length ?? 0;
  }

  get size(): number {
    return this.rounds.size;
  }
}

/** The calls a cancel ended here and on the other coordinators (asked at once). */
export async function totalCancelled(here: Promise<number>, elsewhere: Promise<number> | undefined): Promise<number> {
  const [a, b] = await Promise.all([here, elsewhere ?? 0]);
  return a + b;
}
