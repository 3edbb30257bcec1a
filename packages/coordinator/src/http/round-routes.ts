import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Dispatcher } from '../dispatcher.js';
import { pathId, type RouteContext, requireSession } from './context.js';
import { HttpError } from './errors.js';
import { formatRound, type WireFormat } from './format.js';
import { parseFormat, parseIdempotencyKey, parseRoundBody, parseRoundWait, prefersAsync } from './validate.js';

/** (v1.3) Where a round's answer is read: `GET` of this answers it, on any coordinator. */
export function roundLocation(session: string, run: string, round: string): string {
  const e = encodeURIComponent;
  return `/v1/sessions/${e(session)}/runs/${e(run)}/rounds/${e(round)}`;
}

/** Submitting rounds (waited for, or with `Prefer: respond-async` handed over), reading them back, and cancelling runs. */
export async function registerRoundRoutes(app: FastifyInstance, { dispatcher }: RouteContext): Promise<void> {
  app.post('/v1/sessions/:session/runs/:run/rounds', async function submitRound(request, reply) {
    // Everything is checked before the engine sees the round: a rejected request changes no state.
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    const format = parseFormat(request.query);
    const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
    const calls = parseRoundBody(request.body);
    // No abort signal from the connection: a client that lost it retries with the same
    // Idempotency-Key and must find the round finished, not cancelled (DESIGN.md).
    const input = { session, run, calls, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) };
    if (prefersAsync(request.headers.prefer)) {
      const answer = await dispatcher.submitRoundAsync(input);
      void reply.header('preference-applied', 'respond-async');
      if (answer.status === 'done') return formatted(dispatcher, answer.response, format, calls, session);
      void reply.code(202).header('location', roundLocation(session, run, answer.round));
      return { round: answer.round, run: answer.run, status: 'running' };
    }
    return formatted(dispatcher, await dispatcher.submitRound(input), format, calls, session);
  });

  app.get('/v1/sessions/:session/runs/:run/rounds/:round', async function getRound(request, reply) {
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    const round = pathId(request, 'round', 'the round id');
    const format = parseFormat(request.query);
    const waitMs = parseRoundWait(request.query);
    await requireSession(dispatcher, session);
    const view = await dispatcher.getRound(session, run, round, { waitMs, signal: goneSignal(reply) });
    if (!view)
      throw new HttpError(
        404,
        'round_not_found',
        `run ${run} of session ${session} has no round ${round} (or its answer is past TD_ROUND_RETENTION_MS)`,
      );
    if (view.status === 'running') return reply.code(202).send(view);
    // The views need to know which items were not function calls, as they were sent.
    const calls = (view.items ?? []).map((type) => (type === undefined ? {} : { type }));
    return formatted(dispatcher, view.response, format, calls, session);
  });

  app.delete('/v1/sessions/:session/runs/:run', async function cancelRun(request) {
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    await requireSession(dispatcher, session);
    return { cancelled: await dispatcher.cancelRun(session, run) };
  });
}

/** A round's answer in the format asked for (Anthropic's tool search shapes find_tools results when the session has it on). */
async function formatted(
  dispatcher: Dispatcher,
  response: Parameters<typeof formatRound>[0],
  format: WireFormat,
  calls: readonly unknown[],
  session: string,
) {
  const toolSearch = format === 'anthropic' ? (await dispatcher.getSession(session))?.toolSearch : undefined;
  return formatRound(response, format, calls, toolSearch);
}

/** Aborted when the client goes away before the answer is sent (a `wait` then stops holding on). */
function goneSignal(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
}
