import type { FastifyInstance } from 'fastify';
import type { DispatchEvent } from '../events/event-bus.js';
import { pathId, type RouteContext, requireSession } from './context.js';
import { HttpError } from './errors.js';
import { openSseStream, type SseStream } from './sse.js';
import { parseLastEventId } from './validate.js';

/** A session's server-sent events, with Last-Event-ID replay. */
export async function registerEventRoutes(app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { dispatcher, streams } = ctx;

  // No HEAD twin: a HEAD would subscribe and hold a stream open that can carry no body.
  app.get('/v1/sessions/:session/events', { exposeHeadRoute: false }, async function streamEvents(request, reply) {
    const session = pathId(request, 'session', 'the session id');
    const lastEventId = parseLastEventId(request.headers['last-event-id'], request.query);
    if (ctx.closing.value)
      throw new HttpError(503, 'shutting_down', 'the coordinator is shutting down; reconnect to another');
    await requireSession(dispatcher, session);

    // Subscribe before answering, so a failure is still a JSON error; events that arrive in
    // between (replayed ones first) wait in order and go out right after the headers.
    const early: DispatchEvent[] = [];
    let stream: SseStream | undefined;
    const unsubscribe = await dispatcher.subscribe(session, lastEventId, function deliverEvent(event) {
      if (stream) stream.send(event);
      else early.push(event);
    });
    // The client may have left while we subscribed (the request stream itself ends early, so
    // look at the socket).
    const gone = reply.raw.destroyed || (reply.raw.socket?.destroyed ?? true);
    reply.hijack();
    if (gone || ctx.closing.value) {
      unsubscribe();
      reply.raw.destroy();
      return reply;
    }
    const opened = openSseStream(reply.raw, ctx.sse);
    stream = opened;
    for (const event of early.splice(0)) opened.send(event);
    streams.add(opened);
    opened.onClose(function cleanUpSubscription() {
      streams.delete(opened);
      unsubscribe();
    });
    return reply;
  });
}
