import type { FastifyInstance } from 'fastify';
import { pathId, type RouteContext, requireSession } from './context.js';
import { formatRound } from './format.js';
import { parseFormat, parseIdempotencyKey, parseRoundBody } from './validate.js';

/** Submitting rounds and cancelling runs. */
export async function registerRoundRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.post('/v1/sessions/:session/runs/:run/rounds', async function submitRound(request) {
    // Everything is checked before the engine sees the round: a rejected request changes no state.
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    const format = parseFormat(request.query);
    const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
    const calls = parseRoundBody(request.body);
    // No abort signal from the connection: a client that lost it retries with the same
    // Idempotency-Key and must find the round finished, not cancelled (DESIGN.md).
    const response = await dispatcher.submitRound({
      session,
      run,
      calls,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    });
    // Anthropic's tool search shapes find_tools results in the anthropic view (the session says whether it is on).
    const toolSearch = format === 'anthropic' ? (await dispatcher.getSession(session))?.toolSearch : undefined;
    return formatRound(response, format, calls, toolSearch);
  });

  app.delete('/v1/sessions/:session/runs/:run', async function cancelRun(request) {
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    await requireSession(dispatcher, session);
    return { cancelled: await dispatcher.cancelRun(session, run) };
  });
}
