/** A bounded pool: at most `limit` holders at once, the rest waiting in order. */
export class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** The release function when a slot is free now (no promise to wait on), else undefined. */
  tryAcquire(): (() => void) | undefined {
    if (this.active >= this.limit || this.waiting.length > 0) return undefined;
    this.active++;
    return this.releaser();
  }

  /**
   * Resolves with the release function once a slot is free. A waiter whose `signal` aborts leaves
   * the line without taking a slot (the promise rejects with the signal's reason).
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw signal.reason;
    if (this.active < this.limit) this.active++;
    else await this.wait(signal);
    return this.releaser();
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
  }
}
