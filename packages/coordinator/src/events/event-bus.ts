/** Event names on a session's stream (API.md). */
export type EventName =
  | 'round.started'
  | 'confirm.requested'
  | 'input.requested'
  | 'tool.result'
  | 'round.completed'
  | 'grant.created'
  | 'grant.used'
  | 'grant.revoked';

export interface DispatchEvent {
  /** Monotonic within the session; a client resumes with it as Last-Event-ID. */
  id: string;
  name: EventName;
  data: Record<string, unknown>;
  /** Epoch ms. */
  at: number;
}

/** Per-session event streams with a 15-minute replay window (EVENT_REPLAY_MS). */
export interface EventBus {
  publish(session: string, name: EventName, data: Record<string, unknown>): Promise<void>;
  /** Publishes several events of one session in order, at once. */
  publishMany(session: string, events: readonly { name: EventName; data: Record<string, unknown> }[]): Promise<void>;
  /**
   * Delivers, in order, the events after `lastEventId` still in the window (none when undefined),
   * then every new one. Returns the unsubscribe function.
   */
  subscribe(
    session: string,
    lastEventId: string | undefined,
    onEvent: (event: DispatchEvent) => void,
  ): Promise<() => void>;
  /** Waits until live subscribers have been handed what was published (at most `timeoutMs`). */
  flush?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}
