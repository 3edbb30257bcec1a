import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpError } from './errors.js';
import { type HttpTimeouts, MAX_HEADER_BYTES } from './limits.js';

/** Node's HTTP parser errors (llhttp's `HPE_*`) and its timeout carry a code; fastify's type says so too. */
type ClientError = Error & { code?: string; reason?: string };

/** What the caller is told for the parser errors whose own reason would puzzle them. */
const PARSE_ERROR_REASONS: Readonly<Record<string, string>> = {
  HPE_INVALID_EOF_STATE: 'the connection ended before the request did (a body shorter than its Content-Length?)',
  HPE_INVALID_METHOD: 'the request line does not start with an HTTP method',
  HPE_INVALID_TRANSFER_ENCODING:
    'Transfer-Encoding must end in chunked and cannot come with Content-Length (request smuggling guard)',
};

/** The answer to an error Node raised on a connection before any route ran (parser, header size, timeouts). */
export function clientErrorAnswer(error: ClientError, timeouts: HttpTimeouts): HttpError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HttpError(
        431,
        'headers_too_large',
        `the request line and headers are over ${MAX_HEADER_BYTES} bytes (MAX_HEADER_BYTES)`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new HttpError(413, 'payload_too_large', 'the chunk extensions of the request body are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new HttpError(
        408,
        'request_timeout',
        `the request did not arrive in time: headers within ${timeouts.headersMs} ms (HEADERS_TIMEOUT_MS), ` +
          `the whole request within ${timeouts.requestMs} ms (REQUEST_TIMEOUT_MS)`,
      );
    default: {
      const reason = (error.code && PARSE_ERROR_REASONS[error.code]) ?? error.reason ?? error.message;
      return new HttpError(
        400,
        'invalid_request',
        `malformed HTTP/1.1 request: ${reason} (${error.code ?? 'no code'})`,
      );
    }
  }
}

/** A complete HTTP/1.1 response carrying `error` in API.md's shape, for a socket no response object owns. */
export function rawErrorResponse(error: HttpError): string {
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** The response Node has bound to the socket, if a request got that far (Node's own field, untyped). */
const inFlightResponse = (socket: Duplex) =>
  (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;

/**
 * The `clientError` handler (fastify's `clientErrorHandler`): writes the contract's error body
 * straight to the socket and closes it, as Node's own handler does with its bare bodies. Nothing
 * is written once a response has started on that socket: that would corrupt it.
 */
export function createClientErrorHandler(timeouts: HttpTimeouts): (error: ClientError, socket: Duplex) => void {
  return function answerClientError(error, socket) {
    // A reset connection has no one left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable && !inFlightResponse(socket)?.headersSent) {
      socket.write(rawErrorResponse(clientErrorAnswer(error, timeouts)));
    }
    // Destroyed at once, like Node does: parsing stops, so no half-received request reaches a route.
    socket.destroy();
  };
}

/**
 * Answers what Node would answer itself, bypassing fastify, in bare bodies: CONNECT (no tunnels
 * here; Node would drop the socket without a word) and an `Expect` other than 100-continue (417).
 */
export function installRawServerAnswers(server: Server): void {
  server.on('connect', function refuseConnect(_request: IncomingMessage, socket: Duplex) {
    const refusal = new HttpError(405, 'method_not_allowed', 'CONNECT is not supported: this is not a proxy');
    socket.end(rawErrorResponse(refusal), () => socket.destroy());
  });
  server.on('checkExpectation', function refuseExpectation(request: IncomingMessage, response: ServerResponse) {
    const refusal = new HttpError(
      417,
      'expectation_failed',
      `the only Expect this server meets is 100-continue; got ${JSON.stringify(String(request.headers.expect).slice(0, 100))}`,
    );
    const body = JSON.stringify(refusal.toBody());
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}
