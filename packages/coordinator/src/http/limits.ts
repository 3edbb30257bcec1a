/**
 * Limits of the HTTP layer below the routes (README "Limits"). The body limit is
 * `MAX_BODY_BYTES` in the shared package, since the client checks it too.
 */

/** Most bytes of a request line and its headers together; more is 431 (Node's default, made explicit). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** How long a client may take to send its request line and headers; then 408. */
export const HEADERS_TIMEOUT_MS = 30_000;
/**
 * How long a client may take to send its whole request, body included; then 408. Only the
 * upload counts: a round that takes longer to answer is not cut.
 */
export const REQUEST_TIMEOUT_MS = 60_000;
/**
 * How many connections the kernel may hold for the server, set up but not yet taken by it (the
 * `listen(2)` backlog; Node's default is 511). A burst of new connections past it overflows the
 * accept queue: the kernel drops their handshakes and the clients send again after 1, 3, 7, 15 s…,
 * so their requests answer tens of seconds late, reset, or 408 (headers not in time). Linux caps
 * it at `net.core.somaxconn` (4096 by default).
 */
export const LISTEN_BACKLOG = 65_535;
/** How often Node looks for connections past those timeouts (its default is 30 s). */
const TIMEOUT_CHECK_MS = 1_000;

/** Timeouts a server may tighten (tests do); absent fields take the defaults above. */
export interface HttpTimeoutOptions {
  headersMs?: number;
  requestMs?: number;
}

export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  /** How often expired connections are looked for: at most a third of the headers timeout. */
  checkEveryMs: number;
}

/** Fills the defaults and refuses values Node would refuse later (it needs headers ≤ request). */
export function resolveHttpTimeouts(options: HttpTimeoutOptions = {}): HttpTimeouts {
  const headersMs = options.headersMs ?? HEADERS_TIMEOUT_MS;
  const requestMs = options.requestMs ?? REQUEST_TIMEOUT_MS;
  for (const [name, value] of [
    ['headersMs', headersMs],
    ['requestMs', requestMs],
  ] as const) {
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`timeouts.${name} must be a positive integer, got ${value}`);
  }
  if (headersMs > requestMs) {
    throw new Error(`timeouts.headersMs (${headersMs}) must not exceed timeouts.requestMs (${requestMs})`);
  }
  return { headersMs, requestMs, checkEveryMs: Math.max(10, Math.min(TIMEOUT_CHECK_MS, Math.floor(headersMs / 3))) };
}
