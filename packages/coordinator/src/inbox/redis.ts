import { type RedisKeys, redisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import type { InboxChange } from '../model.js';
import { duplicateClient, type RedisClient } from '../support/redis-client.js';
import type { InboxFeed } from './inbox-feed.js';

export interface RedisInboxFeedOptions {
  /** A connection the caller owns; the feed duplicates it once for its subscription, when first watched. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
}

/** Most sessions the index keeps: past it, those whose wait ends first are dropped. */
const MAX_INDEXED_SESSIONS = 10_000;

/**
 * The inbox feed over Redis: changes on a pub/sub channel every coordinator hears, and the
 * sessions with something asked in one sorted set scored by when their wait ends (so a
 * coordinator that died leaves nothing listed past its deadlines).
 */
export class RedisInboxFeed implements InboxFeed {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly listeners = new Set<(change: InboxChange) => void>();
  private subscriber: RedisClient | undefined;
  private subscribed: Promise<unknown> | undefined;

  constructor(options: RedisInboxFeedOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
  }

  async announce(change: InboxChange): Promise<void> {
    if (change.kind === 'asked') {
      const key = this.keys.inboxSessions();
      await this.redis
        .multi()
        // GT: a later deadline extends the listing, an earlier one never shortens it (new members are added).
        .zadd(key, 'GT', change.item.deadline, change.session)
        .zremrangebyscore(key, '-inf', Date.now())
        .zremrangebyrank(key, 0, -MAX_INDEXED_SESSIONS - 1)
        .exec();
    }
    await this.redis.publish(this.keys.inboxChannel(), JSON.stringify(change));
  }

  async watch(onChange: (change: InboxChange) => void): Promise<() => void> {
    this.listeners.add(onChange);
    await this.subscribe();
    return () => this.listeners.delete(onChange);
  }

  async sessions(now: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.inboxSessions(), `(${now}`, '+inf');
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.subscriber?.disconnect();
  }

  private subscribe(): Promise<unknown> {
    if (this.subscribed) return this.subscribed;
    const subscriber = duplicateClient(this.redis);
    this.subscriber = subscriber;
    subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.keys.inboxChannel()) return;
      const change = parseChange(message);
      if (change) for (const listener of [...this.listeners]) deliver(listener, change);
    });
    this.subscribed = subscriber.subscribe(this.keys.inboxChannel());
    return this.subscribed;
  }
}

/** A change as published, or undefined for anything else. */
export function parseChange(message: string): InboxChange | undefined {
  const c = tryParseJson(message) as Partial<InboxChange> | undefined;
  if (!c || typeof c.session !== 'string') return undefined;
  if (c.kind === 'gone' && typeof c.id === 'string') return { kind: 'gone', session: c.session, id: c.id };
  if (c.kind === 'asked' && typeof c.item === 'object' && c.item !== null && typeof c.item.id === 'string')
    return { kind: 'asked', session: c.session, item: c.item };
  return undefined;
}

function deliver(listener: (change: InboxChange) => void, change: InboxChange): void {
  try {
    listener(change);
  } catch {
    // One watcher's failure is its own.
  }
}
