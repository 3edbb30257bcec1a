import { isValidId } from '@tool-dispatch/shared';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Dispatcher } from '../dispatcher.js';
import { HttpError } from './errors.js';
import { OPEN_PRINCIPAL, type Principal, type Role } from './tokens.js';

/**
 * Who may call what (API.md v1.2 "Tenants, tokens and approval grants"), by route as fastify
 * names it. `approver`: the reads and answers of its tenant's sessions; `backend`: every /v1 route
 * and /mcp of its tenant; `operator`: everything. A route not listed here is operator-only, so a
 * new route is closed to the other roles until it is added.
 */
const APPROVER_ROUTES: ReadonlySet<string> = new Set([
  'GET /v1/sessions/:session',
  'GET /v1/sessions/:session/history',
  'GET /v1/sessions/:session/events',
  'GET /v1/sessions/:session/confirmations',
  'POST /v1/sessions/:session/confirmations/:confirmation',
  'GET /v1/sessions/:session/inputs',
  'POST /v1/sessions/:session/inputs/:input',
  'GET /v1/sessions/:session/grants',
]);

/** The roles that may call `method url` (a route's pattern). */
export function rolesFor(method: string, url: string): Role[] {
  const roles: Role[] = ['operator'];
  const m = method === 'HEAD' ? 'GET' : method;
  if (url.startsWith('/v1/') || url === '/mcp') roles.push('backend');
  if (APPROVER_ROUTES.has(`${m} ${url}`)) roles.push('approver');
  // The approvals inbox: for every role (its routes check the tenant of the session they name).
  if (url === '/inbox' || url.startsWith('/inbox/')) roles.push('backend', 'approver');
  return roles;
}

const principals = new WeakMap<FastifyRequest['raw'], Principal>();

/** Records who the request speaks for (the auth hook). */
export function setPrincipal(request: FastifyRequest, principal: Principal): void {
  principals.set(request.raw, principal);
}

/** Who the request speaks for; a server without tokens: anybody, every tenant. */
export function principalOf(request: FastifyRequest): Principal {
  return principals.get(request.raw) ?? OPEN_PRINCIPAL;
}

/** 403 unless the principal's role may call the request's route. */
export function checkRole(request: FastifyRequest, principal: Principal): void {
  const url = request.routeOptions.url ?? '';
  if (rolesFor(request.method, url).includes(principal.role)) return;
  throw new HttpError(
    403,
    'forbidden',
    `token ${principal.name} (role ${principal.role}) may not call ${request.method} ${url || request.url.split('?')[0]}`,
  );
}

/** The session a request acts on: its `:session` parameter, or /mcp's `?session=` / `TD-Session`. */
function sessionNamed(request: FastifyRequest): string | undefined {
  const params = request.params as Record<string, unknown> | undefined;
  if (typeof params?.session === 'string') return params.session;
  if ((request.routeOptions.url ?? '') !== '/mcp') return undefined;
  const q = (request.query as Record<string, unknown> | undefined)?.session;
  const h = request.headers['td-session'];
  const given = q ?? h;
  return typeof given === 'string' ? given : undefined;
}

const notFound = (session: string) =>
  new HttpError(
    404,
    'session_not_found',
    `session ${session} does not exist; create it with PUT /v1/sessions/${session}`,
  );

/**
 * Tenant scoping of every route that names a session: another tenant's session is 404 (as if it
 * did not exist); a PUT naming another tenant is 403, one naming none gets the token's tenant.
 */
export async function checkTenant(request: FastifyRequest, principal: Principal, dispatcher: Dispatcher) {
  if (principal.tenant === '*') return;
  const session = sessionNamed(request);
  if (session === undefined || !isValidId(session)) return; // the route's own checks answer 400
  const isPut = request.method === 'PUT' && request.routeOptions.url === '/v1/sessions/:session';
  if (isPut && typeof request.body === 'object' && request.body !== null && !Array.isArray(request.body)) {
    const body = request.body as Record<string, unknown>;
    if (body.tenant !== undefined && body.tenant !== principal.tenant)
      throw new HttpError(
        403,
        'forbidden',
        `token ${principal.name} acts for tenant ${principal.tenant}; it may not name tenant ${JSON.stringify(body.tenant)}`,
      );
    body.tenant = principal.tenant;
  }
  const state = await dispatcher.getSession(session);
  if (state && state.tenant !== principal.tenant) throw notFound(session);
}

/** Role and tenant checks after the body is parsed, for every route but the public ones. */
export function installAccessChecks(app: FastifyInstance, dispatcher: Dispatcher, isPublic: (url: string) => boolean) {
  app.addHook('preHandler', async function checkAccess(request) {
    // No route matched: the not-found handler answers 404 (or 405) whoever asks.
    if (request.routeOptions.url === undefined || isPublic(request.routeOptions.url)) return;
    const principal = principalOf(request);
    checkRole(request, principal);
    await checkTenant(request, principal, dispatcher);
  });
}
