import type { FastifyInstance } from 'fastify';
import type { PendingConfirmation } from '../confirm/confirm-hub.js';
import { principalOf } from './access.js';
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
    const { approve, remember, grant } = parseConfirmationBody(request.body);
    await requireSession(dispatcher, session);
    // "remember" only means something with an approval (API.md); it is a tool grant without expiry (v1.2).
    const who = principalOf(request).name;
    const answer = { approve, remember: approve && remember, who, ...(grant ? { grant } : {}) };
    const answered = await dispatcher.answerConfirmation(session, id, answer);
    const made = answered.grant ? { grant: answered.grant } : {};
    return { confirmation: confirmationView(answered), approve, remember: approve && remember, ...made };
  });

  // v1.2: the session's grants, and revoking one.
  app.get('/v1/sessions/:session/grants', async function listGrants(request) {
    const session = pathId(request, 'session', 'the session id');
    return { grants: await dispatcher.grants(session) };
  });

  app.delete('/v1/sessions/:session/grants/:grant', async function revokeGrant(request) {
    const session = pathId(request, 'session', 'the session id');
    const grantId = pathId(request, 'grant', 'the grant id');
    await dispatcher.revokeGrant(session, grantId, principalOf(request).name);
    return { revoked: grantId };
  });
}
