import { EVENT_REPLAY_MS } from '@tool-dispatch/shared';
import { type RedisKeys, redisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import { EventStreamWriter } from '../support/event-stream.js';
import { duplicateClient, type RedisClient, runScript } from '../support/redis-client.js';
import type { DispatchEvent, EventBus, EventName } from './event-bus.js';
import { parsePublishEventsReply, publishEventsScript } from './lua/publishEvents-1.lua.js';

export interface RedisEventBusOptions {
  /** A connection the caller owns; each subscription duplicates it for its blocking reads. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
  /** Replay window (default EVENT_REPLAY_MS, 15 minutes). */
  replayMs?: number;
  /** Longest single XREAD BLOCK (default 5 s); unsubscribe does not wait for it. */
  blockMs?: number;
}

const STREAM_ID = /^\d+-\d+$/;
const READ_COUNT = 100;
const RETRY_MS = 250;

type StreamEntry = [id: string, fields: string[]];

/**
 * Per-session event streams in Redis: one stream per session, ids are stream ids (so they are
 * monotonic across coordinators), trimmed with MINID to the replay window.
 */
export class RedisEventBus implements EventBus {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly replayMs: number;
  private readonly blockMs: number;
  private readonly stops = new Set<() => void>();
  /** Each live subscription's stream key and the id of the last entry it read. */
  private readonly cursors = new Map<() => void, { key: string; cursor: () => string }>();
  private readonly writer: EventStreamWriter;

  constructor(options: RedisEventBusOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.replayMs = options.replayMs ?? EVENT_REPLAY_MS;
    this.blockMs = options.blockMs ?? 5_000;
    this.writer = new EventStreamWriter(this.keys, this.replayMs);
  }

  async publish(session: string, name: EventName, data: Record<string, unknown>): Promise<void> {
    await this.publishMany(session, [{ name, data }]);
  }

  async publishMany(
    session: string,
    events: readonly { name: EventName; data: Record<string, unknown> }[],
  ): Promise<void> {
    if (events.length === 0) return;
    const write = this.writer.prepare(session);
    const pairs = events.flatMap((e) => [e.name, JSON.stringify(e.data)]);
    parsePublishEventsReply(await runScript(this.redis, publishEventsScript, [write.key], [...write.args, ...pairs]));
    write.done();
  }

  async subscribe(
    session: string,
    lastEventId: string | undefined,
    onEvent: (event: DispatchEvent) => void,
  ): Promise<() => void> {
    const key = this.keys.events(session);
    // Tail from the newest event now in the stream: anything published after it is delivered live.
    const newest = ((await this.redis.xrevrange(key, '+', '-', 'COUNT', 1)) as StreamEntry[])[0]?.[0];
    let cursor = newest ?? '0-0';
    if (lastEventId !== undefined && newest !== undefined) {
      // An id this stream issued: what came after it. Any other ("0", an id of another deployment,
      // one later than the newest): the whole replay window, as the embedded bus does.
      const issued = STREAM_ID.test(lastEventId) && compareStreamIds(lastEventId, newest) <= 0;
      const missed = (await this.redis.xrange(key, issued ? `(${lastEventId}` : '-', newest)) as StreamEntry[];
      const cutoff = Date.now() - this.replayMs;
      for (const entry of missed) {
        const event = toEvent(entry);
        if (event && event.at >= cutoff) deliver(onEvent, event);
      }
    }
    const reader = duplicateClient(this.redis);
    reader.on('error', () => {}); // reconnects on its own; the loop retries
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.stops.delete(stop);
      this.cursors.delete(stop);
      reader.disconnect();
    };
    this.stops.add(stop);
    this.cursors.set(stop, { key, cursor: () => cursor });
    const tail = async () => {
      while (!stopped) {
        try {
          const reply = (await reader.xread('COUNT', READ_COUNT, 'BLOCK', this.blockMs, 'STREAMS', key, cursor)) as
            | [string, StreamEntry[]][]
            | null;
          for (const entry of reply?.[0]?.[1] ?? []) {
            if (stopped) return;
            cursor = entry[0];
            const event = toEvent(entry);
            if (event) deliver(onEvent, event);
          }
        } catch {
          if (!stopped) await new Promise((r) => setTimeout(r, RETRY_MS));
        }
      }
    };
    void tail();
    return stop;
  }

  /**
   * Waits (at most `timeoutMs`) until every live subscription has read what its stream holds now,
   * so a shutdown that ends the event streams right after does not cut off the last events.
   */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const subs = [...this.cursors.values()];
    const newest = new Map<string, string | undefined>();
    for (const { key } of subs) {
      if (newest.has(key)) continue;
      const entry = ((await this.redis.xrevrange(key, '+', '-', 'COUNT', 1).catch(() => [])) as StreamEntry[])[0];
      newest.set(key, entry?.[0]);
    }
    const behind = () =>
      subs.some(({ key, cursor }) => {
        const last = newest.get(key);
        return last !== undefined && compareStreamIds(cursor(), last) < 0;
      });
    while (behind() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  /** Ends every subscription; the caller's connection stays open. */
  async close(): Promise<void> {
    for (const stop of [...this.stops]) stop();
  }
}

/** Orders two stream ids (`<ms>-<seq>`). */
function compareStreamIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

function toEvent([id, fields]: StreamEntry): DispatchEvent | undefined {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1] as string);
  const name = map.get('name') as EventName | undefined;
  const data = tryParseJson(map.get('data'));
  if (!name || typeof data !== 'object' || data === null) return undefined;
  return { id, name, data: data as Record<string, unknown>, at: Number(id.split('-')[0]) };
}

function deliver(onEvent: (event: DispatchEvent) => void, event: DispatchEvent): void {
  try {
    onEvent(event);
  } catch {
    // A listener's failure is its own; the stream goes on for the others.
  }
}
