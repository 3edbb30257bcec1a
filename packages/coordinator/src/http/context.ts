import type { FastifyRequest } from 'fastify';
import type { Dispatcher } from '../dispatcher.js';
import { HttpError } from './errors.js';
import type { SseOptions, SseStream } from './sse.js';
import { isObject, requireId } from './validate.js';

/** What the route groups share. @internal */
export interface RouteContext {
  dispatcher: Dispatcher;
  /** Open event streams, ended on shutdown. */
  streams: Set<SseStream>;
  /** Set once the server is closing: no new event streams then. */
  closing: { value: boolean };
  sse: SseOptions;
}

/** A path parameter that must be an id (API.md), else 400. @internal */
export function pathId(request: FastifyRequest, name: string, what: string): string {
  const params = isObject(request.params) ? request.params : {};
  return requireId(params[name], what);
}

/** 404 unless the session exists, so requests about unknown sessions change nothing. @internal */
export async function requireSession(dispatcher: Dispatcher, session: string): Promise<void> {
  if (!(await dispatcher.getSession(session))) {
    throw new HttpError(
      404,
      'session_not_found',
      `session ${session} does not exist; create it with PUT /v1/sessions/${session}`,
    );
  }
}
