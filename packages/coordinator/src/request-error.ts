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
  /**
   * Redis refused or did not answer in time, or a durability point was not acknowledged by the
   * replicas TD_REDIS_REPLICA_ACKS asks for (API.md v1.2): 503 with Retry-After; retry under the key.
   */
  | 'unavailable'
  /** The coordinator's rounds in flight were at TD_MAX_ROUNDS_IN_FLIGHT for TD_ROUND_QUEUE_MS: nothing is begun; retry. */
  | 'overloaded'
  /** (v1.2) No grant of the session under that id. */
  | 'grant_not_found'
  /** (v1.2) The session has MAX_GRANTS_PER_SESSION live grants: revoke one first. */
  | 'too_many_grants';

export class RequestError extends Error {
  constructor(
    readonly code: RequestErrorCode,
    message: string,
    /** An `unavailable` from a durability point: written on the primary, not acknowledged by its replicas. */
    readonly unacknowledged = false,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}
