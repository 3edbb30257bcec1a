interface Waiter {
  grant(): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
}

/** A counting semaphore: at most `limit` holders at once, the rest queued in order. */
export class Semaphore {
  private active = 0;
  private readonly queue: Waiter[] = [];
  /** The waiters of each signal, behind its one abort listener. */
  private readonly bySignal = new Map<AbortSignal, { waiters: Set<Waiter>; onAbort: () => void }>();

  constructor(readonly limit: number) {}

  /**
   * A place, now or once one is free (in order). Aborting `signal` drops its waiters: one listener
   * per signal for all of them, since every call of a run waits on the run's one signal.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    const now = this.take();
    if (now) return now;
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { grant: resolve, reject, signal };
      this.queue.push(waiter);
      if (signal) this.watch(signal, waiter);
    });
    return this.releaser();
  }

  private watch(signal: AbortSignal, waiter: Waiter): void {
    let watched = this.bySignal.get(signal);
    if (!watched) {
      const waiters = new Set<Waiter>();
      const onAbort = () => {
        this.bySignal.delete(signal);
        for (const w of waiters) {
          const i = this.queue.indexOf(w);
          if (i >= 0) this.queue.splice(i, 1);
          w.reject(signal.reason ?? new Error('aborted'));
        }
      };
      watched = { waiters, onAbort };
      this.bySignal.set(signal, watched);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    watched.waiters.add(waiter);
  }

  /** A waiter granted its place: its signal's listener goes with the signal's last waiter. */
  private unwatch(waiter: Waiter): void {
    const { signal } = waiter;
    const watched = signal && this.bySignal.get(signal);
    if (!signal || !watched) return;
    watched.waiters.delete(waiter);
    if (watched.waiters.size > 0) return;
    this.bySignal.delete(signal);
    signal.removeEventListener('abort', watched.onAbort);
  }

  /** A place now, without a wait (no promise), or undefined when none is free. */
  take(): (() => void) | undefined {
    if (this.active >= this.limit) return undefined;
    this.active++;
    return this.releaser();
  }

  /** True when `acquire` would grant a place at once. */
  get isFree(): boolean {
    return this.active < this.limit;
  }

  /** Places held now. */
  get held(): number {
    return this.active;
  }

  /** Holders plus waiters. */
  get load(): number {
    return this.active + this.queue.length;
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.shift();
      if (!next) {
        this.active--;
        return;
      }
      this.unwatch(next);
      next.grant();
    };
  }
}
