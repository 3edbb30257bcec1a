import type { InboxChange } from '../model.js';
import type { InboxFeed } from './inbox-feed.js';

/** Sessions listed before the ones whose wait ended are dropped on an announcement. */
const PRUNE_AT = 10_000;

/** Embedded mode's inbox feed: listeners in this process, sessions with the latest deadline asked in each. */
export class MemoryInboxFeed implements InboxFeed {
  private readonly listeners = new Set<(change: InboxChange) => void>();
  private readonly until = new Map<string, number>();

  async announce(change: InboxChange): Promise<void> {
    if (change.kind === 'asked') {
      if (this.until.size >= PRUNE_AT) await this.sessions(Date.now());
      const before = this.until.get(change.session) ?? 0;
      this.until.set(change.session, Math.max(before, change.item.deadline));
    }
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch {
        // One watcher's failure is its own.
      }
    }
  }

  async watch(onChange: (change: InboxChange) => void): Promise<() => void> {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  async sessions(now: number): Promise<string[]> {
    for (const [session, until] of this.until) if (until <= now) this.until.delete(session);
    return [...this.until.keys()];
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
