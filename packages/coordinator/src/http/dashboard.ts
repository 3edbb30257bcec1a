import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * The queue dashboard (bull-board) at /admin/queues. Registered inside the app, so the API
 * token check (onRequest hook) covers it like /v1/*.
 */
export async function mountQueueDashboard(app: FastifyInstance, queues: () => Queue[]): Promise<void> {
  const adapter = new FastifyAdapter();
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues().map((q) => new BullMQAdapter(q, { readOnlyMode: false })),
    serverAdapter: adapter,
  });
  await app.register(adapter.registerPlugin(), { prefix: DASHBOARD_PATH });
}
