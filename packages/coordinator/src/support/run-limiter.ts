import { getOrCreate } from './maps.js';

/** A counting semaphore: at most `limit` holders at once, the rest queued in order. */
export class Semaphore {
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(readonly limit: number) {}

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.queue.indexOf(grant);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      this.queue.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return this.releaser();
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
      if (next) next();
      else this.active--;
    };
  }
}

/** One semaphore per run (MAX_CONCURRENT_TOOLS in flight per run), dropped when idle. */
export class RunLimiter {
  private readonly runs = new Map<string, Semaphore>();

  constructor(private readonly limit: number) {}

  async acquire(runKey: string, signal?: AbortSignal): Promise<() => void> {
    const s = getOrCreate(this.runs, runKey, () => new Semaphore(this.limit));
    try {
      const release = await s.acquire(signal);
      return () => {
        release();
        if (s.load === 0 && this.runs.get(runKey) === s) this.runs.delete(runKey);
      };
    } catch (e) {
      if (s.load === 0 && this.runs.get(runKey) === s) this.runs.delete(runKey);
      throw e;
    }
  }
}
