import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

/**
 * Parses every request body as JSON, whatever its Content-Type says (or when it has none):
 * agent backends send `application/json; charset=…`, `text/plain` or nothing at all, and a body
 * that parses is what matters. An empty body is `undefined`; one that does not parse is 400.
 * Prototype keys in args are left to the engine, which answers that call `invalid`.
 */
export function installJsonBodyParser(app: FastifyInstance, bodyLimit: number): void {
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
