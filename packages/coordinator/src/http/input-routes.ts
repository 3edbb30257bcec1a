import type { FastifyInstance } from 'fastify';
import { inputView } from '../rules/park.js';
import { pathId, type RouteContext, requireSession } from './context.js';
import { parseInputBody } from './validate.js';

/** Listing and answering a session's parked calls (API.md "Parked calls"). */
export async function registerInputRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.get('/v1/sessions/:session/inputs', async function listInputs(request) {
    const session = pathId(request, 'session', 'the session id');
    await requireSession(dispatcher, session);
    return { inputs: (await dispatcher.pendingInputs(session)).map(inputView) };
  });

  app.post('/v1/sessions/:session/inputs/:input', async function answerInput(request) {
    // Everything is checked before the engine sees the answer: a rejected one changes nothing.
    const session = pathId(request, 'session', 'the session id');
    const id = pathId(request, 'input', 'the input id (or call id)');
    const answer = parseInputBody(request.body);
    await requireSession(dispatcher, session);
    return dispatcher.answerInput(session, id, answer);
  });
}
