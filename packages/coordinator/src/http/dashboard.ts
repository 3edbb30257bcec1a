import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { QueueClass } from '@tool-dispatch/shared';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { registerLoginRoutes } from './dashboard-login.js';
import { createDashboardSessions, DASHBOARD_CSP, DASHBOARD_PATH } from './dashboard-session.js';

export { DASHBOARD_CSP, DASHBOARD_PATH };

/** `<link>` and `<script>` tags naming an absolute http(s) URL: another origin's assets. */
const FOREIGN_ASSET = /<(?:link|script)\b[^>]*\b(?:href|src)="(?:https?:)?\/\/[^"]*"[^>]*>(?:\s*<\/script>)?/gi;

/** bull-board's page without the tags that load assets from elsewhere (its web fonts: system fonts stand in). */
export function stripForeignAssets(html: string): string {
  return html.replace(FOREIGN_ASSET, '');
}

export interface QueueDashboardOptions {
  /** The execution queues by class (one per shard), once the executor exists. */
  queues: () => Partial<Record<QueueClass, readonly Queue[]>>;
  /** TD_PREFIX: shown before each queue's name, and in the title. */
  prefix: string;
  /** TD_API_TOKEN: when set, `<base>/login` takes it and gives the browser a session cookie. */
  apiToken?: string | undefined;
}

/**
 * bull-board adapters: the serial queue read-only (a retried side-effecting job runs its side
 * effect again, with nobody waiting for its result: DESIGN.md failure semantics), names shown
 * with the deployment's prefix (`<TD_PREFIX>:{td-serial}`, as its Redis keys start).
 */
function adaptersOf(queues: Partial<Record<QueueClass, readonly Queue[]>>, prefix: string): BullMQAdapter[] {
  return Object.entries(queues).flatMap(([cls, shards]) =>
    shards.map((queue) => new BullMQAdapter(queue, { readOnlyMode: cls === 'serial', prefix: `${prefix}:` })),
  );
}

/**
 * The queue dashboard (bull-board) at /admin/queues. Registered inside the app, so the API
 * token check (onRequest hook) covers it like /v1/*; with a token, a browser logs in through
 * `<base>/login` (the hook also accepts that session cookie under this path).
 */
export async function mountQueueDashboard(app: FastifyInstance, options: QueueDashboardOptions): Promise<void> {
  const title = `tool-dispatch queues (${options.prefix})`;
  const adapter = new FastifyAdapter();
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: adaptersOf(options.queues(), options.prefix),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: title } },
  });
  await app.register(
    async function queueDashboard(scope) {
      scope.addHook('onSend', async function isolateDashboardPage(_request, reply, payload) {
        reply.header('content-security-policy', DASHBOARD_CSP);
        reply.header('referrer-policy', 'no-referrer');
        const type = String(reply.getHeader('content-type') ?? '');
        return typeof payload === 'string' && type.startsWith('text/html') ? stripForeignAssets(payload) : payload;
      });
      if (options.apiToken) {
        const sessions = createDashboardSessions(options.apiToken);
        registerLoginRoutes(scope, { title, token: options.apiToken, sessions });
      }
      await scope.register(adapter.registerPlugin());
    },
    { prefix: DASHBOARD_PATH },
  );
}
