import type { NeutralTool, ToolDefinition, ToolSpec } from '@tool-dispatch/shared';
import type { PendingConfirmation } from './confirm/confirm-hub.js';
import type { DispatchEvent } from './events/event-bus.js';
import type { HistoryEntry, RoundResponse, SessionState } from './model.js';

/** Body of `PUT /v1/sessions/{session}` after edge validation. */
export interface SessionInput {
  provider: string;
  tenant?: string;
  autoApprove?: string[] | 'all';
  clientTools?: ToolDefinition[];
}

export interface ToolsView {
  tools: NeutralTool[];
  context: string;
}

export interface SubmitRoundInput {
  session: string;
  run: string;
  /** Raw calls in any of the three shapes (native, OpenAI, Anthropic); normalised by the engine. */
  calls: unknown[];
  idempotencyKey?: string;
  /** W3C trace context of the HTTP request span, when tracing. */
  signal?: AbortSignal;
}

/** Catalog entry as `GET /v1/tools` shows it. */
export type CatalogView = Pick<
  ToolSpec,
  'name' | 'description' | 'concurrency' | 'confirm' | 'deferred' | 'cacheable' | 'parameters'
>;

/** Why the engine refused a request as a whole (maps to an HTTP status at the edge). */
export type RequestErrorCode =
  | 'session_not_found'
  | 'idempotency_conflict'
  | 'invalid_request'
  | 'confirmation_not_found'
  | 'confirmation_ambiguous'
  | 'shutting_down'
  /** A round given up by its coordinator after its retries (a retry under its Idempotency-Key). */
  | 'round_failed';

export class RequestError extends Error {
  constructor(
    readonly code: RequestErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** The coordinator's engine as the HTTP layer (and embedded users) see it. */
export interface Dispatcher {
  putSession(session: string, input: SessionInput): Promise<SessionState>;
  getSession(session: string): Promise<SessionState | null>;
  /** Throws RequestError('session_not_found'). */
  toolsFor(session: string): Promise<ToolsView>;
  /** Runs a round through the three passes. Throws RequestError for 404/409/400-class problems. */
  submitRound(input: SubmitRoundInput): Promise<RoundResponse>;
  subscribe(session: string, lastEventId: string | undefined, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
  pendingConfirmations(session: string): Promise<PendingConfirmation[]>;
  /** Throws RequestError('confirmation_not_found' | 'confirmation_ambiguous'). */
  answerConfirmation(
    session: string,
    idOrCallId: string,
    decision: { approve: boolean; remember: boolean },
  ): Promise<PendingConfirmation>;
  /** Cancels a run's queued, running and awaiting-approval calls; the number that ended cancelled. */
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
