import type { FastifyInstance } from 'fastify';
import { pathId, type RouteContext, requireSession } from './context.js';
import { HttpError } from './errors.js';
import { formatTools } from './format.js';
import { parseFormat, parseSessionBody, parseToolFilter } from './validate.js';

/** Sessions, their tools array and their history. */
export async function registerSessionRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.put('/v1/sessions/:session', async function putSession(request) {
    const session = pathId(request, 'session', 'the session id');
    const input = parseSessionBody(request.body);
    return dispatcher.putSession(session, input);
  });

  // Beyond API.md: read a session back (the typed client's getSession).
  app.get('/v1/sessions/:session', async function getSession(request) {
    const session = pathId(request, 'session', 'the session id');
    const state = await dispatcher.getSession(session);
    if (!state) throw new HttpError(404, 'session_not_found', `session ${session} does not exist`);
    return state;
  });

  app.get('/v1/sessions/:session/tools', async function getTools(request) {
    const session = pathId(request, 'session', 'the session id');
    const format = parseFormat(request.query);
    const view = await dispatcher.toolsFor(session);
    return { tools: formatTools(view.tools, format), context: view.context };
  });

  app.get('/v1/sessions/:session/history', async function getHistory(request) {
    const session = pathId(request, 'session', 'the session id');
    const tool = parseToolFilter(request.query);
    await requireSession(dispatcher, session);
    return { results: await dispatcher.history(session, tool) };
  });
}
