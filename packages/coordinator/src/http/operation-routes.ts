import type { FastifyInstance } from 'fastify';
import type { Dispatcher } from '../dispatcher.js';
import type { RouteContext } from './context.js';
import { HttpError } from './errors.js';
import { OPENAPI_PATH, registerOpenApiRoute } from './openapi-route.js';

/** Routes that stay open when TD_API_TOKEN is set (probes, scrapers and API tooling carry no token). */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics', OPENAPI_PATH]);

/** Prometheus text exposition format 0.0.4. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A valid exposition when no registry is wired in (tests, embedded users). */
export function minimalMetrics(dispatcher: Dispatcher): string {
  return [
    '# HELP td_rounds_in_progress Rounds in progress on this coordinator.',
    '# TYPE td_rounds_in_progress gauge',
    `td_rounds_in_progress ${dispatcher.inFlightRounds()}`,
    '',
  ].join('\n');
}

/** Probes, metrics, the OpenAPI document and the catalog. */
export async function registerOperationRoutes(
  app: FastifyInstance,
  { dispatcher }: RouteContext,
  metricsText: (() => Promise<string>) | undefined,
): Promise<void> {
  app.get('/healthz', async function healthz() {
    return { status: 'ok' };
  });

  app.get('/readyz', async function readyz() {
    const ready = await dispatcher.ready().catch(() => false);
    if (!ready) throw new HttpError(503, 'not_ready', 'not ready: the store is unreachable or no worker is alive');
    return { status: 'ready' };
  });

  app.get('/metrics', async function metrics(_request, reply) {
    const text = metricsText ? await metricsText() : minimalMetrics(dispatcher);
    return reply.type(METRICS_CONTENT_TYPE).send(text);
  });

  await registerOpenApiRoute(app);

  app.get('/v1/tools', async function catalog() {
    return { tools: await dispatcher.catalog() };
  });
}
