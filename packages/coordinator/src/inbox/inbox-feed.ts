import type { InboxChange } from '../model.js';

export type { InboxChange, InboxItem } from '../model.js';

/**
 * The inbox's view across sessions: every coordinator announces what it asks and what stops
 * waiting, and each coordinator's `/inbox` hears all of it. The items themselves stay in the
 * confirm and input hubs; this seam only says which sessions to read and when something changed.
 */
export interface InboxFeed {
  /** Tells every watcher (on every coordinator); an `asked` change also lists its session until `item.deadline`. */
  announce(change: InboxChange): Promise<void>;
  /** Hears every change announced from now on, in order per announcer. Returns the unwatch function. */
  watch(onChange: (change: InboxChange) => void): Promise<() => void>;
  /** Sessions with something asked whose wait has not ended by `now` (epoch ms). */
  sessions(now: number): Promise<string[]>;
  close(): Promise<void>;
}
