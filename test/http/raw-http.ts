import { connect } from 'node:net';
import { expect } from 'vitest';

/** One HTTP/1.1 response as read off a raw socket. */
export interface RawResponse {
  status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
  /** Whether the server closed the connection after this response. */
  closed: boolean;
}

export interface ExchangeOptions {
  /** After the last chunk: half-close our side (FIN) or keep it open. Default 'keep-open'. */
  after?: 'half-close' | 'keep-open';
  /** Give up (and fail) when nothing complete arrived by then. Default 10 s. */
  waitMs?: number;
}

/**
 * Writes raw bytes to 127.0.0.1:port (chunks are written one by one, so a test can send headers
 * and then a partial body) and reads the first response, to the end of its body or of the stream.
 */
export function exchange(port: number, chunks: (string | Buffer)[], options: ExchangeOptions = {}) {
  return new Promise<RawResponse>((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let settled = false;
    const timer = setTimeout(
      () =>
        settle(
          new Error(`no complete response in ${options.waitMs ?? 10_000} ms: ${JSON.stringify(String(received))}`),
        ),
      options.waitMs ?? 10_000,
    );
    function settle(outcome: RawResponse | Error) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    }
    function tryParse(closed: boolean) {
      try {
        const parsed = parseResponse(received, closed);
        if (parsed) settle(parsed);
        else if (closed) settle(new Error(`closed without a complete response: ${JSON.stringify(String(received))}`));
      } catch (e) {
        settle(e instanceof Error ? e : new Error(String(e)));
      }
    }
    socket.on('data', function collect(chunk: Buffer) {
      received = Buffer.concat([received, chunk]);
      tryParse(false);
    });
    socket.on('end', () => tryParse(true));
    socket.on('close', () => tryParse(true));
    // A reset after the response is still a response; before it, the close handler reports it.
    socket.on('error', () => tryParse(true));
    socket.on('connect', async function writeChunks() {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        await new Promise<void>((done) => socket.write(chunk, () => done()));
        // Let the server see each chunk apart (e.g. headers before a partial body).
        await new Promise((r) => setTimeout(r, 20));
      }
      if (options.after === 'half-close' && !socket.destroyed) socket.end();
    });
  });
}

/** The first complete response in `bytes`, or undefined while it is incomplete. */
function parseResponse(bytes: Buffer, closed: boolean): RawResponse | undefined {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match?.[1]) throw new Error(`not an HTTP/1.x status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(headEnd + 4);
  let body: Buffer | undefined;
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length >= length) body = rest.subarray(0, length);
  } else if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    body = dechunk(rest);
  } else if (closed) {
    body = rest;
  }
  if (!body) return undefined;
  const connection = headers.connection?.toLowerCase();
  return { status: Number(match[1]), headers, body: body.toString('utf8'), closed: closed || connection === 'close' };
}

/** The body of a complete chunked encoding, or undefined while it is incomplete. */
function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/**
 * Asserts API.md's error shape exactly: `{"error": {"code", "message"}}` and nothing else (no
 * fastify `statusCode`), JSON content type, the given status and code.
 */
export function expectContractError(
  response: { status: number; headers: Record<string, string> | Headers; body: string },
  status: number,
  code: string,
): void {
  const contentType =
    response.headers instanceof Headers ? response.headers.get('content-type') : response.headers['content-type'];
  expect(response.status, response.body).toBe(status);
  expect(contentType, response.body).toMatch(/^application\/json(;|$)/);
  const body: unknown = JSON.parse(response.body);
  expect(body).toEqual({ error: { code, message: expect.any(String) } });
  expect((body as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
}

/** A request head with the given lines, CRLF-separated, ending in the blank line. */
export const head = (...lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;
