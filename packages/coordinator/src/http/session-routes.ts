import type { FastifyInstance } from 'fastify';
import type { SessionState } from '../model.js';
import { pathId, type RouteContext, requireSession } from './context.js';
import { HttpError } from './errors.js';
import { formatTools } from './format.js';
import { parseFormat, parseSessionBody, parseToolFilter } from './validate.js';

/** Sessions, their tools array and their history. */
export async function registerSessionRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.put('/v1/sessions/:session', async function putSession(request) {
    const session = pathId(request, 'session', 'the session id');
    const input = parseSessionBody(request.body);
    return shown(await dispatcher.putSession(session, input));
  });

  // Beyond API.md: read a session back (the typed client's getSession).
  app.get('/v1/sessions/:session', async function getSession(request) {
    const session = pathId(request, 'session', 'the session id');
    const state = await dispatcher.getSession(session);
    if (!state) throw new HttpError(404, 'session_not_found', `session ${session} does not exist`);
    return shown(state);
  });

  app.get('/v1/sessions/:session/tools', async function getTools(request) {
    const session = pathId(request, 'session', 'the session id');
    const format = parseFormat(request.query);
    const view = await dispatcher.toolsFor(session);
    return { tools: formatTools(view.tools, format, view.toolSearch), context: view.context };
  });

  app.get('/v1/sessions/:session/history', async function getHistory(request) {
    const session = pathId(request, 'session', 'the session id');
    const tool = parseToolFilter(request.query);
    await requireSession(dispatcher, session);
    return { results: await dispatcher.history(session, tool) };
  });
}

/** A session as the API shows it: without what it keeps for itself (the budget its PUT set, beside the one in force). */
function shown(state: SessionState): Omit<SessionState, 'ownBudget'> {
  const { ownBudget: _own, ...rest } = state;
  return rest;
}
