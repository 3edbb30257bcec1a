/**
 * One holder at a time, the rest waiting in order; a waiter whose signal aborts leaves the line.
 * An MCP server link runs one call at a time through it. @internal
 */
export class Turns {
  private busy = false;
  private readonly waiting: Array<{ grant(): void }> = [];

  /** Resolves with the release function once it is this caller's turn; rejects with the signal's reason when it aborts first. */
  take(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** Callers waiting for their turn. */
  get queued(): number {
    return this.waiting.length;
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.busy = false;
    };
  }
}
