import type { DispatchEvent, EventBus } from '../events/event-bus.js';
import type { RoundRef } from '../model.js';

interface Watch {
  /** Resolves to the subscription's unsubscribe once it is live. */
  live: Promise<() => void>;
  /** Round id → the wakers of those waiting for it. */
  waiters: Map<string, Set<() => void>>;
}

/**
 * (v1.3) Waits for rounds' commits (`round.completed` on their session's event stream): one
 * subscription per session with somebody waiting, in this process, however many wait, dropped
 * when the last waiter goes. Woken by the event, never by polling the store.
 */
export class RoundWaiters {
  private readonly watches = new Map<string, Watch>();

  constructor(private readonly events: Pick<EventBus, 'subscribe'>) {}

  /**
   * Starts listening for `ref`'s commit: resolves once the subscription is live (so a commit after
   * it is heard), to `ended` (resolves when the round's `round.completed` arrives) and `stop`.
   */
  async listen(ref: RoundRef): Promise<{ ended: Promise<void>; stop: () => void }> {
    const watch = this.watchOf(ref.session);
    let wake!: () => void;
    const ended = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const forRound = watch.waiters.get(ref.round) ?? new Set();
    watch.waiters.set(ref.round, forRound);
    forRound.add(wake);
    const stop = () => {
      forRound.delete(wake);
      if (forRound.size === 0 && watch.waiters.get(ref.round) === forRound) watch.waiters.delete(ref.round);
      if (watch.waiters.size === 0 && this.watches.get(ref.session) === watch) {
        this.watches.delete(ref.session);
        void watch.live.then((unsubscribe) => unsubscribe()).catch(() => undefined);
      }
    };
    try {
      await watch.live;
    } catch (e) {
      stop();
      throw e;
    }
    return { ended, stop };
  }

  /** How many sessions are watched (for tests: none once nobody waits). */
  get size(): number {
    return this.watches.size;
  }

  private watchOf(session: string): Watch {
    const kept = this.watches.get(session);
    if (kept) return kept;
    const waiters = new Map<string, Set<() => void>>();
    const onEvent = (e: DispatchEvent) => {
      if (e.name !== 'round.completed' || typeof e.data.round !== 'string') return;
      for (const wake of waiters.get(e.data.round) ?? []) wake();
    };
    const watch: Watch = { live: this.events.subscribe(session, undefined, onEvent), waiters };
    // A subscription that failed is not kept: the next waiter tries again.
    watch.live.catch(() => {
      if (this.watches.get(session) === watch) this.watches.delete(session);
    });
    this.watches.set(session, watch);
    return watch;
  }
}
