import { EVENT_REPLAY_MS } from '@tool-dispatch/shared';
import { getOrCreate } from '../support/maps.js';
import type { DispatchEvent, EventBus, EventName } from './event-bus.js';

/**
 * Embedded-mode event streams: a per-session list trimmed to the replay window, plus live listeners;
 * a session whose last event left the window is forgotten (as its Redis stream expires).
 */
export class MemoryEventBus implements EventBus {
  private readonly logs = new Map<string, DispatchEvent[]>();
  private readonly listeners = new Map<string, Set<(e: DispatchEvent) => void>>();
  private seq = 0;
  private sweptAt: number;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly replayMs = EVENT_REPLAY_MS,
  ) {
    this.sweptAt = now();
  }

  /** Drops the logs of sessions with nothing left to replay, at most once per replay window (or minute). */
  private sweep(now: number): void {
    if (now - this.sweptAt < Math.min(this.replayMs, 60_000)) return;
    this.sweptAt = now;
    const cutoff = now - this.replayMs;
    for (const [session, log] of this.logs) if ((log.at(-1)?.at ?? 0) < cutoff) this.logs.delete(session);
  }

  async publish(session: string, name: EventName, data: Record<string, unknown>): Promise<void> {
    const event: DispatchEvent = { id: String(++this.seq), name, data, at: this.now() };
    this.sweep(event.at);
    const log = getOrCreate(this.logs, session, () => []);
    log.push(event);
    const cutoff = this.now() - this.replayMs;
    while (log.length > 0 && (log[0] as DispatchEvent).at < cutoff) log.shift();
    for (const l of this.listeners.get(session) ?? []) l(event);
  }

  async publishMany(
    session: string,
    events: readonly { name: EventName; data: Record<string, unknown> }[],
  ): Promise<void> {
    for (const e of events) await this.publish(session, e.name, e.data);
  }

  async subscribe(
    session: string,
    lastEventId: string | undefined,
    onEvent: (event: DispatchEvent) => void,
  ): Promise<() => void> {
    if (lastEventId !== undefined) {
      // An id this bus issued: what came after it. Any other (not a number, or later than the
      // last one issued): the whole replay window, as the Redis bus does.
      const after = Number(lastEventId);
      const from = Number.isInteger(after) && after >= 0 && after <= this.seq ? after : 0;
      const cutoff = this.now() - this.replayMs;
      for (const e of this.logs.get(session) ?? []) {
        if (Number(e.id) > from && e.at >= cutoff) onEvent(e);
      }
    }
    const set = getOrCreate(this.listeners, session, () => new Set<(e: DispatchEvent) => void>());
    set.add(onEvent);
    return () => {
      set.delete(onEvent);
      if (set.size === 0) this.listeners.delete(session);
    };
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
