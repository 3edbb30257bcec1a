/**
 * How long the last calls held a place of each named limit, in this process: a concurrency
 * limit's `retryAfterMs` is estimated from it (`retryAfterOf`). The last `keep` per limit, at most
 * `maxLimits` limits (the least recently held dropped first).
 */
export class HoldTimes {
  private readonly byName = new Map<string, number[]>();

  constructor(
    private readonly keep = 32,
    private readonly maxLimits = 1024,
  ) {}

  record(name: string, ms: number): void {
    const times = this.byName.get(name) ?? [];
    this.byName.delete(name); // re-inserted last: the map's order is the order limits were last held in
    times.push(ms);
    if (times.length > this.keep) times.shift();
    this.byName.set(name, times);
    if (this.byName.size > this.maxLimits) this.byName.delete(this.byName.keys().next().value as string);
  }

  /** The mean of the last hold times of `name`; undefined before a call held one of its places to the end. */
  meanMs(name: string): number | undefined {
    const times = this.byName.get(name);
    if (!times || times.length === 0) return undefined;
    return times.reduce((a, b) => a + b, 0) / times.length;
  }
}
