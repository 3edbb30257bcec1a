/** Why the engine refused a request as a whole (maps to an HTTP status at the edge). */
export type RequestErrorCode =
  | 'session_not_found'
  | 'idempotency_conflict'
  | 'invalid_request'
  | 'confirmation_not_found'
  | 'confirmation_ambiguous'
  | 'input_not_found'
  | 'input_ambiguous'
  | 'shutting_down'
  /** A round given up by its coordinator after its retries (a retry under its Idempotency-Key). */
  | 'round_failed'
  /** The store did not answer a round's beginning in time (Redis away): nothing is begun; retry. */
  | 'store_unavailable'
  /** The coordinator's rounds in flight were at TD_MAX_ROUNDS_IN_FLIGHT for TD_ROUND_QUEUE_MS: nothing is begun; retry. */
  | 'overloaded';

export class RequestError extends Error {
  constructor(
    readonly code: RequestErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}
