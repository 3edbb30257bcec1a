/**
 * Per key, whether something periodic is due (a Redis key's TTL pushed back, say): at most once
 * every `everyMs` for each key. The memo is bounded: past `maxKeys` keys it starts over, which
 * only makes the work due again early.
 */
export class DuePerKey {
  private readonly doneAt = new Map<string, number>();

  constructor(
    private readonly everyMs: number,
    private readonly maxKeys = 10_000,
  ) {}

  due(key: string, now = Date.now()): boolean {
    return now - (this.doneAt.get(key) ?? 0) >= this.everyMs;
  }

  done(key: string, now = Date.now()): void {
    if (this.doneAt.size >= this.maxKeys) this.doneAt.clear();
    this.doneAt.set(key, now);
  }
}
