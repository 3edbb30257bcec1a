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

/** What a call of a run asks for: a place of the run's limit, and for a serial call its serial lane too. */
export type RunPlace = 'concurrent' | 'serial';

/** A wait for a place: behind another serial call of the run (`serial_lane`), or the run's limit (`run_limit`). */
export type RunWait = { reason: 'serial_lane' | 'run_limit'; startMs: number; endMs: number };

interface RunSlots {
  /** MAX_CONCURRENT_TOOLS places, for every call of the run. */
  calls: Semaphore;
  /** One place: a run never has two serial calls in flight, even of rounds submitted together (API.md). */
  serial: Semaphore;
}

/**
 * Per run: at most `limit` calls in flight (MAX_CONCURRENT_TOOLS) and one serial call at a time,
 * each granted in order; a run's places are dropped once it is idle.
 */
export class RunLimiter {
  private readonly runs = new Map<string, RunSlots>();

  constructor(private readonly limit: number) {}

  /**
   * The run's places for one call when they are free now, with no wait (most calls: no promise,
   * nothing queued); undefined when the call must wait (`acquire`).
   */
  tryAcquire(runKey: string, place: RunPlace = 'concurrent'): (() => void) | undefined {
    const run = this.runs.get(runKey);
    if (run && (!run.calls.isFree || (place === 'serial' && !run.serial.isFree))) return undefined;
    const slots = run ?? this.slotsOf(runKey);
    const lane = place === 'serial' ? slots.serial.take() : undefined;
    const call = slots.calls.take() as () => void;
    return () => {
      call();
      lane?.();
      this.dropIfIdle(runKey, slots);
    };
  }

  /** The run's places for one call; `onWait` hears of each wait the call had for one (tracing). */
  async acquire(
    runKey: string,
    signal?: AbortSignal,
    place: RunPlace = 'concurrent',
    onWait?: (wait: RunWait) => void,
  ): Promise<() => void> {
    const run = this.runs.get(runKey) ?? this.slotsOf(runKey);
    const held: (() => void)[] = [];
    const release = () => {
      for (const r of held.splice(0).reverse()) r();
      this.dropIfIdle(runKey, run);
    };
    try {
      // The serial lane first: a serial call waiting for another's end holds none of the run's places.
      if (place === 'serial') held.push(await waitFor(run.serial, 'serial_lane', signal, onWait));
      held.push(await waitFor(run.calls, 'run_limit', signal, onWait));
      return release;
    } catch (e) {
      release();
      throw e;
    }
  }

  private slotsOf(runKey: string): RunSlots {
    const slots = { calls: new Semaphore(this.limit), serial: new Semaphore(1) };
    this.runs.set(runKey, slots);
    return slots;
  }

  private dropIfIdle(runKey: string, run: RunSlots): void {
    if (run.calls.load === 0 && run.serial.load === 0 && this.runs.get(runKey) === run) this.runs.delete(runKey);
  }
}

/** A place of `semaphore`, telling `onWait` when it was not free at once. */
async function waitFor(
  semaphore: Semaphore,
  reason: RunWait['reason'],
  signal: AbortSignal | undefined,
  onWait: ((wait: RunWait) => void) | undefined,
): Promise<() => void> {
  if (!onWait || semaphore.isFree) return semaphore.acquire(signal);
  const startMs = Date.now();
  const release = await semaphore.acquire(signal);
  onWait({ reason, startMs, endMs: Date.now() });
  return release;
}
