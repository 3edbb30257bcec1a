import { MAX_BODY_BYTES } from '@tool-dispatch/shared';
import { RequestError, type RequestErrorCode } from '../dispatcher.js';

/** Error codes of the HTTP edge, as they appear in `{"error": {"code"}}` (plus the engine's). */
export type HttpErrorCode =
  | RequestErrorCode
  | 'invalid_json'
  | 'invalid_id'
  | 'too_many_calls'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'round_not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'expectation_failed'
  | 'headers_too_large'
  | 'not_ready'
  | 'internal_error';

/** The one error body shape of API.md. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** A request refused at the edge: a status, a wire code and a message for the caller. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: HttpErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/** The engine's refusals and the status each maps to; a code without a status fails to compile. */
const REQUEST_ERROR_STATUS = {
  session_not_found: 404,
  idempotency_conflict: 409,
  invalid_request: 400,
  confirmation_not_found: 404,
  confirmation_ambiguous: 409,
  input_not_found: 404,
  input_ambiguous: 409,
  shutting_down: 503,
  round_failed: 500,
  unavailable: 503,
  overloaded: 503,
  grant_not_found: 404,
  too_many_grants: 409,
} as const satisfies Record<RequestErrorCode, number>;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isRequestError(e: unknown): e is RequestError {
  if (e instanceof RequestError) return true;
  // A second copy of the module (bundled CLI next to sources) still has the same name and code.
  return (
    e instanceof Error &&
    e.name === 'RequestError' &&
    isRecord(e) &&
    Object.hasOwn(REQUEST_ERROR_STATUS, String(e.code))
  );
}

/** fastify's own errors (content-type parser, body limit, bad URL) reshaped into our codes. */
function fromFastifyError(e: Record<string, unknown>, status: number): HttpError {
  const message = typeof e.message === 'string' && e.message ? e.message : 'bad request';
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(
        413,
        'payload_too_large',
        `the request body is over ${MAX_BODY_BYTES} bytes (MAX_BODY_BYTES)`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, 'unsupported_media_type', 'the Content-Type header is not a valid media type');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HttpError(400, 'invalid_id', 'a path segment is far longer than an id (at most 128 characters)');
    case 'FST_ERR_BAD_URL':
      return new HttpError(400, 'invalid_id', 'the URL path is not valid percent-encoding');
    case 'FST_ERR_NOT_FOUND':
      return new HttpError(404, 'not_found', message);
    default:
      if (status === 404) return new HttpError(404, 'not_found', message);
      if (status === 413) return new HttpError(413, 'payload_too_large', message);
      return new HttpError(status, 'invalid_request', message);
  }
}

/**
 * Redis refusing a command or not answering it for now (API.md v1.2 "Refusals"): a node down, a
 * cluster slot without its primary (CLUSTERDOWN, TRYAGAIN, MASTERDOWN), a demoted primary
 * (READONLY), too few replicas (NOREPLICAS), a node loading (LOADING), a command past its
 * deadline (TD_REDIS_COMMAND_TIMEOUT_MS), the retries of a request used up. Matched by name and
 * message, as the HTTP edge does not import the client (the same list as `isRedisRefusal` in
 * `@tool-dispatch/shared/redis`; errors.test.ts checks they agree).
 */
export const REDIS_UNREACHABLE =
  /\b(NOREPLICAS|READONLY|CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN) |Command timed out|Too many Cluster redirections|Connection is closed|Reached the max retries per request|Stream isn't writeable|ECONNREFUSED|ECONNRESET|Failed to refresh slots cache|None of startup nodes is available/;

/** Whether an error is Redis refusing or unreachable (answered 503 unavailable, retryable), a durability point unacknowledged included. */
export function isRedisUnreachable(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  return (
    e.name === 'NotDurableError' ||
    e.name === 'MaxRetriesPerRequestError' ||
    e.name === 'ClusterAllFailedError' ||
    REDIS_UNREACHABLE.test(e.message)
  );
}

/** Seconds a client is told to wait (Retry-After) before sending a request again after a 503. */
export const STORE_RETRY_AFTER_S = 1;

/**
 * Turns anything a route threw into an HttpError. Unknown errors become a 500 whose message
 * hides internals; `internal` tells the caller to log the original.
 */
export function toHttpError(e: unknown): { error: HttpError; internal: boolean } {
  if (e instanceof HttpError) return { error: e, internal: false };
  if (isRequestError(e))
    return { error: new HttpError(REQUEST_ERROR_STATUS[e.code], e.code, e.message), internal: false };
  if (isRecord(e)) {
    const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
    if (Array.isArray(e.validation)) {
      return { error: new HttpError(400, 'invalid_request', String(e.message ?? 'invalid request')), internal: false };
    }
    if (status !== undefined && status >= 400 && status < 500)
      return { error: fromFastifyError(e, status), internal: false };
  }
  if (isRedisUnreachable(e)) {
    const why = `Redis (the store) cannot take this request right now (${(e as Error).message}); send the request again (a round under the same Idempotency-Key) in a moment`;
    return { error: new HttpError(503, 'unavailable', why), internal: true };
  }
  return { error: new HttpError(500, 'internal_error', 'internal error; see the coordinator log'), internal: true };
}
