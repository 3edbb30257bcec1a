import type { ConfirmAnswer, PendingConfirmation } from './confirm/confirm-hub.js';
import type { DispatchEvent } from './events/event-bus.js';
import type {
  AsyncRoundReply,
  CatalogView,
  Grant,
  HistoryEntry,
  InboxChange,
  InboxItem,
  InputAnswer,
  ParkedInput,
  RoundResponse,
  RoundView,
  SessionInput,
  SessionState,
  SubmitRoundInput,
  ToolsView,
} from './model.js';

export type {
  AsyncRoundReply,
  CallState,
  CatalogView,
  RoundCallState,
  RoundView,
  SessionInput,
  SubmitRoundInput,
  ToolSource,
  ToolsView,
} from './model.js';
export { RequestError, type RequestErrorCode } from './request-error.js';

/** The coordinator's engine as the HTTP layer (and embedded users) see it. */
export interface Dispatcher {
  putSession(session: string, input: SessionInput): Promise<SessionState>;
  getSession(session: string): Promise<SessionState | null>;
  /** Throws RequestError('session_not_found'). */
  toolsFor(session: string): Promise<ToolsView>;
  /** Runs a round through the three passes. Throws RequestError for 404/409/400-class problems. */
  submitRound(input: SubmitRoundInput): Promise<RoundResponse>;
  /**
   * (v1.3) Starts a round and answers at once (`Prefer: respond-async`): `running` with its id
   * once it is stored (any coordinator then answers `getRound` for it), or `done` with its answer
   * when it had already ended (an Idempotency-Key retry of a finished round). The round runs as if
   * the caller waited; `input.signal` does not reach it, `input.cancel` does. Throws as `submitRound`.
   */
  submitRoundAsync(input: SubmitRoundInput): Promise<AsyncRoundReply>;
  /**
   * (v1.3) A round as the store has it: `done` with the answer the waiting `submitRound` gave (the
   * same every time, on any coordinator), or `running` with each call's state; null when the
   * session's run has no such round (or its TD_ROUND_RETENTION_MS passed). `waitMs` (at most
   * 60000) holds on until the round's commit (`round.completed`), or the time passes, or `signal`
   * aborts. A round its coordinator gave up throws RequestError('round_failed').
   */
  getRound(
    session: string,
    run: string,
    round: string,
    opts?: { waitMs?: number; signal?: AbortSignal },
  ): Promise<RoundView | null>;
  /**
   * (v1.3) Cancels one round (one submitted with `submitRoundAsync`, or taken over from a
   * coordinator that died) on whichever coordinator runs it: its calls end `cancelled` as with
   * `cancelRun`; the number that did (0 when it runs nowhere). Throws RequestError('session_not_found').
   */
  cancelRound(session: string, run: string, round: string): Promise<number>;
  subscribe(session: string, lastEventId: string | undefined, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
  pendingConfirmations(session: string): Promise<PendingConfirmation[]>;
  /** Throws RequestError('confirmation_not_found' | 'confirmation_ambiguous'). */
  answerConfirmation(
    session: string,
    idOrCallId: string,
    decision: ConfirmAnswer,
  ): Promise<PendingConfirmation & { grant?: Grant }>;
  /** (v1.2) The session's live grants, oldest first. Throws RequestError('session_not_found'). */
  grants(session: string): Promise<Grant[]>;
  /** (v1.2) Revokes a grant at once (`grant.revoked`, `by` a token's name). Throws RequestError('grant_not_found'). */
  revokeGrant(session: string, grantId: string, by: string): Promise<void>;
  /** The session's parked calls, oldest first. Throws RequestError('session_not_found'). */
  pendingInputs(session: string): Promise<ParkedInput[]>;
  /**
   * Answers a parked call (by inputId, or a callId only one has): the status the answer gives it.
   * Throws RequestError('input_not_found' | 'input_ambiguous' | 'invalid_request').
   */
  answerInput(
    session: string,
    idOrCallId: string,
    answer: InputAnswer,
  ): Promise<{ inputId: string; status: 'ok' | 'error' }>;
  /** (inbox) Sessions that may have something waiting: asked, and not past its deadline. */
  inboxSessions(): Promise<string[]>;
  /** (inbox) What waits in a session: its pending confirmations and parked calls (not ordered). */
  inboxItems(session: string): Promise<InboxItem[]>;
  /** (inbox) Hears every confirmation and parked call asked, and every one that stops waiting, on any coordinator. */
  watchInbox(onChange: (change: InboxChange) => void): Promise<() => void>;
  /** Cancels a run's queued, running, awaiting-approval and parked calls; the number that ended cancelled. */
  cancelRun(session: string, run: string): Promise<number>;
  history(session: string, tool?: string): Promise<HistoryEntry[]>;
  catalog(): Promise<CatalogView[]>;
  /** Store reachable and, in distributed mode, a worker alive. */
  ready(): Promise<boolean>;
  /** Rounds in progress on this coordinator. */
  inFlightRounds(): number;
  /** Stops taking rounds and waits for the in-flight ones (SIGTERM). */
  drain(): Promise<void>;
}
