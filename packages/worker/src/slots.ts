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

  /** Resolves with the release function once a slot is free. */
  async acquire(): Promise<() => void> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.releaser();
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
