import type { FastifyInstance } from 'fastify';
import type { PendingConfirmation } from '../confirm/confirm-hub.js';
import { pathId, type RouteContext, requireSession } from './context.js';
import { parseConfirmationBody } from './validate.js';

/** A pending confirmation as API.md shows it (plus createdAt, epoch ms). */
export function confirmationView(c: PendingConfirmation) {
  return {
    confirmationId: c.confirmationId,
    round: c.round,
    run: c.run,
    callId: c.callId,
    name: c.name,
    args: c.args,
    createdAt: c.createdAt,
  };
}

/** Listing and answering the confirmations a session's rounds wait on. */
export async function registerConfirmationRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.get('/v1/sessions/:session/confirmations', async function listConfirmations(request) {
    const session = pathId(request, 'session', 'the session id');
    await requireSession(dispatcher, session);
    const pending = await dispatcher.pendingConfirmations(session);
    return { confirmations: pending.map(confirmationView) };
  });

  app.post('/v1/sessions/:session/confirmations/:confirmation', async function answerConfirmation(request) {
    const session = pathId(request, 'session', 'the session id');
    const id = pathId(request, 'confirmation', 'the confirmation id (or call id)');
    const { approve, remember } = parseConfirmationBody(request.body);
    await requireSession(dispatcher, session);
    // "remember" only means something with an approval (API.md).
    const answered = await dispatcher.answerConfirmation(session, id, { approve, remember: approve && remember });
    return { confirmation: confirmationView(answered), approve, remember: approve && remember };
  });
}
