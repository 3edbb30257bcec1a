import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** `type/subtype` with optional parameters (RFC 9110 media-type, loosely). */
const MEDIA_TYPE = new RegExp(`^\\s*${TOKEN}/${TOKEN}\\s*(;.*)?$`);

/**
 * Parses every request body as JSON, whatever its Content-Type says (or when it has none):
 * agent backends send `application/json; charset=…`, `text/plain` or nothing at all, and a body
 * that parses is what matters. An empty body is `undefined`; one that does not parse is 400.
 * Prototype keys in args are left to the engine, which answers that call `invalid`.
 */
export function installJsonBodyParser(app: FastifyInstance, bodyLimit: number): void {
  // fastify answers 415 for a Content-Type that is not even a media type; drop such a header so
  // the body is judged by whether it parses.
  app.addHook('onRequest', async function dropMalformedContentType(request) {
    const type = request.raw.headers['content-type'];
    if (type !== undefined && !MEDIA_TYPE.test(type)) delete request.raw.headers['content-type'];
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, function parseJsonBody(_request, body, done) {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      done(new HttpError(400, 'invalid_json', `the body is not valid JSON: ${why}`));
      return;
    }
    done(null, value);
  });
}

/**
 * Reads and drops what is left of a request body, up to `maxBytes` or `maxMs`, so a client
 * still sending an oversized body reads the 413 instead of a reset connection (undici's fetch
 * reports EPIPE when the server closes before the upload ends). Resolves when done or at a cap.
 */
export function discardRequestBody(request: IncomingMessage, maxBytes: number, maxMs: number): Promise<void> {
  if (request.complete || request.readableEnded || request.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      request.off('data', countChunk);
      request.off('end', finish);
      request.off('error', finish);
      request.off('close', finish);
      resolve();
    };
    const countChunk = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish();
    };
    const timer = setTimeout(finish, maxMs);
    request.on('data', countChunk);
    request.once('end', finish);
    request.once('error', finish);
    request.once('close', finish);
    request.resume();
  });
}
