/**
 * A sliding rate window (TD_LIMITS `rate`): at most `count` grants in any `windowMs`, waiters
 * granted in arrival order as the oldest grants leave the window. One process's (MemoryLimits);
 * Redis keeps the same window as a ZSET in acquireLimits.
 */
export class RateWindow {
  private readonly times: number[] = [];
  private readonly queue: { grant: () => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly count: number,
    readonly windowMs: number,
  ) {}

  /** True when a grant now would keep the window (and nobody waits ahead). */
  get isFree(): boolean {
    this.trim(Date.now());
    return this.queue.length === 0 && this.times.length < this.count;
  }

  /** True when the window holds nothing and nobody waits: the window can be dropped. */
  get isIdle(): boolean {
    this.trim(Date.now());
    return this.queue.length === 0 && this.times.length === 0;
  }

  /** Ms until the oldest grant of a full window leaves it (the next grant); 0 when the window has room. */
  nextTokenMs(): number {
    const now = Date.now();
    this.trim(now);
    if (this.times.length < this.count) return 0;
    return Math.max(1, (this.times[0] as number) + this.windowMs - now);
  }

  /** A grant now, if the window has room and nobody waits ahead. */
  tryTake(): boolean {
    if (!this.isFree) return false;
    this.times.push(Date.now());
    return true;
  }

  /** A grant once the window has room, in arrival order; rejects with `signal`'s reason when it aborts first. */
  async take(signal?: AbortSignal): Promise<void> {
    if (this.tryTake()) return;
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.schedule();
    });
  }

  private trim(now: number): void {
    while (this.times.length > 0 && (this.times[0] as number) <= now - this.windowMs) this.times.shift();
  }

  /** Grants waiters as the window has room, then looks again when its oldest grant leaves it. */
  private schedule(): void {
    if (this.timer) return;
    const now = Date.now();
    this.trim(now);
    while (this.queue.length > 0 && this.times.length < this.count) {
      this.times.push(now);
      this.queue.shift()?.grant();
    }
    if (this.queue.length === 0) return;
    const due = (this.times[0] as number) + this.windowMs - now + 1;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.schedule();
      },
      Math.max(1, due),
    );
  }
}
