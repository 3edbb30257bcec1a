import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
  extractContext,
  SpanKind,
  SpanStatusCode,
  type Tracing,
} from '@tool-dispatch/shared/tracing';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The event stream lives for minutes; a span over it would only be noise. */
const UNTRACED_ROUTES: ReadonlySet<string> = new Set(['/v1/sessions/:session/events']);

function isTraced(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  // /mcp's POST and DELETE; its GET is a stream that lives as long as the client.
  if (route === '/mcp') return request.method !== 'GET';
  return (
    route !== undefined && !UNTRACED_ROUTES.has(route) && (route.startsWith('/v1/') || route.startsWith('/admin/'))
  );
}

/**
 * One SERVER span per API request, child of the caller's W3C trace context and active while the
 * handler runs, so the engine's `round` span nests under it (DESIGN.md observability). It starts
 * once the body is parsed and ends when the response is done.
 */
export function installRequestSpans(app: FastifyInstance, tracing: Pick<Tracing, 'enabled' | 'withSpan'>): void {
  if (!tracing.enabled) return;
  app.addHook('preHandler', function traceRequest(request, reply, done) {
    if (!isTraced(request)) {
      done();
      return;
    }
    const route = request.routeOptions.url ?? '';
    const spec = {
      name: `${request.method} ${route}`,
      kind: SpanKind.SERVER,
      parent: extractContext(request.headers),
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: request.method,
        [ATTR_HTTP_ROUTE]: route,
        [ATTR_URL_PATH]: request.url.split('?')[0] ?? '',
      },
    };
    void tracing.withSpan(spec, function inRequestSpan(span) {
      return new Promise<void>((resolve) => {
        reply.raw.once('close', function endRequestSpan() {
          const status = reply.raw.statusCode;
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          resolve();
        });
        // The rest of the lifecycle (the handler) runs inside the span's context.
        done();
      });
    });
  });
}
