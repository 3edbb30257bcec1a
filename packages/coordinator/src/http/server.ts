import { MAX_BODY_BYTES } from '@tool-dispatch/shared';
import type { Tracing } from '@tool-dispatch/shared/tracing';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Dispatcher } from '../dispatcher.js';
import { installAccessChecks, setPrincipal } from './access.js';
import { createBearerCheck } from './auth.js';
import { discardRequestBody, installJsonBodyParser } from './body-parser.js';
import { createClientErrorHandler, installRawServerAnswers } from './client-errors.js';
import { registerConfirmationRoutes } from './confirmation-routes.js';
import type { RouteContext } from './context.js';
import {
  createDashboardSessions,
  DASHBOARD_PATH,
  isDashboardPath,
  LOGIN_PATH,
  LOGOUT_PATH,
} from './dashboard-session.js';
import { HttpError, STORE_RETRY_AFTER_S, toHttpError } from './errors.js';
import { registerEventRoutes } from './event-routes.js';
import {
  createInboxAuth,
  INBOX_LOGIN_PATH,
  INBOX_LOGOUT_PATH,
  type InboxAuth,
  isInboxPath,
  singleTokenLookup,
  tokenTableLookup,
} from './inbox/inbox-auth.js';
import { registerInboxRoutes } from './inbox/inbox-routes.js';
import { registerInputRoutes } from './input-routes.js';
import { type HttpTimeoutOptions, MAX_HEADER_BYTES, resolveHttpTimeouts } from './limits.js';
import { registerMcpRoutes } from './mcp/mcp-routes.js';
import type { McpService } from './mcp/mcp-service.js';
import { PUBLIC_ROUTES, registerOperationRoutes } from './operation-routes.js';
import { installRequestSpans } from './request-spans.js';
import { registerRoundRoutes } from './round-routes.js';
import { trackRouteMethods } from './route-methods.js';
import { registerSessionRoutes } from './session-routes.js';
import type { SseOptions, SseStream } from './sse.js';
import { LEGACY_PRINCIPAL, type Principal, type TokenTable } from './tokens.js';

/**
 * Longest path parameter the router hands to a route. Longer than any valid id (128) so an
 * overlong id reaches the id check and gets its 400 there, with room for percent-encoding.
 */
const MAX_PARAM_LENGTH = 1024;
/** How long the server keeps reading an oversized body before it answers 413 anyway. */
const DISCARD_BODY_MS = 10_000;

export interface BuildServerOptions {
  dispatcher: Dispatcher;
  /** When set, every route but /healthz, /readyz, /metrics and /openapi.json needs `Authorization: Bearer <token>`. */
  apiToken?: string | undefined;
  /** TD_API_TOKENS (v1.2): tokens with a tenant and a role, instead of apiToken. */
  apiTokens?: TokenTable | undefined;
  /** Prometheus exposition for GET /metrics; a minimal valid one when absent. */
  metricsText?: () => Promise<string>;
  /** More routes on the same instance, behind the same auth and error handling (e.g. /admin/queues). */
  extraRoutes?: (app: FastifyInstance) => Promise<void>;
  /** fastify's logger option; off by default. */
  logger?: FastifyServerOptions['logger'];
  /** Where unexpected (500) errors are reported; stderr by default. */
  onInternalError?: (error: unknown) => void;
  /** Event-stream tuning (heartbeat interval, slow-client buffer cap). */
  sse?: SseOptions;
  /** When enabled, one SERVER span per /v1 and /admin request, parent of the engine's round span. */
  tracing?: Pick<Tracing, 'enabled' | 'withSpan'>;
  /** How long a client may take to send its headers and its whole request (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS). */
  timeouts?: HttpTimeoutOptions;
  /** The MCP server at /mcp (API.md v1.2), behind the same bearer token. */
  mcp?: McpService;
}

function sendError(reply: FastifyReply, error: HttpError): FastifyReply {
  if (error.statusCode === 401) reply.header('www-authenticate', 'Bearer');
  if (error.code === 'unavailable' || error.code === 'overloaded')
    reply.header('retry-after', String(STORE_RETRY_AFTER_S));
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

function reportToStderr(error: unknown): void {
  process.stderr.write(
    `tool-dispatch http: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
}

/** fastify with the API's limits: body and header size, request timeouts, errors in the contract's shape at every layer. */
function createFastify(options: BuildServerOptions, timeouts: ReturnType<typeof resolveHttpTimeouts>): FastifyInstance {
  return Fastify({
    logger: options.logger ?? false,
    bodyLimit: MAX_BODY_BYTES,
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      connectionsCheckingInterval: timeouts.checkEveryMs,
      // Node would answer a missing Host with an empty 400; the requireHost hook answers it in our shape.
      requireHostHeader: false,
    },
    // fastify copies this one onto the server after creating it (0 = none otherwise).
    requestTimeout: timeouts.requestMs,
    // Parser errors and timeouts never reach fastify's error handler: answered on the socket.
    clientErrorHandler: createClientErrorHandler(timeouts),
    // fastify's own 503 while closing has another body shape, and in-flight rounds may still
    // need their confirmations answered during a drain; the engine refuses new rounds itself.
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: function reshapeFrameworkError(error, _request, reply) {
      sendError(reply, toHttpError(error).error);
    },
  });
}

/**
 * Every error answered as `{"error": {"code", "message"}}` (API.md): a missing Host, the body
 * parser's and the routes' errors, unknown paths (404) and methods a path does not have (405).
 */
function installErrorAnswers(
  app: FastifyInstance,
  allowedMethods: ReturnType<typeof trackRouteMethods>,
  onInternalError: (error: unknown) => void,
): void {
  app.addHook('onRequest', async function requireHost(request, reply) {
    const { httpVersionMajor, httpVersionMinor } = request.raw;
    if (httpVersionMajor === 1 && httpVersionMinor === 1 && request.headers.host === undefined) {
      // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400; Node closes such a connection too.
      reply.header('connection', 'close');
      return sendError(reply, new HttpError(400, 'invalid_request', 'an HTTP/1.1 request needs a Host header'));
    }
  });
  installJsonBodyParser(app, MAX_BODY_BYTES);
  app.setErrorHandler(async function sendErrorBody(error, request, reply) {
    const { error: httpError, internal } = toHttpError(error);
    // Redis away is said in one line (its reconnects are logged too), not a stack per request.
    if (internal)
      onInternalError(httpError.code === 'unavailable' ? `redis unreachable: ${(error as Error).message}` : error);
    // fastify refuses an oversized body before reading it; read the rest so the client sees the 413.
    if (httpError.statusCode === 413) await discardRequestBody(request.raw, 4 * MAX_BODY_BYTES, DISCARD_BODY_MS);
    return sendError(reply, httpError);
  });
  app.setNotFoundHandler(function routeNotFound(request, reply) {
    const path = request.url.split('?')[0] ?? '';
    const shown = `${request.method} ${path.slice(0, 200)}`;
    const allowed = allowedMethods(path);
    if (allowed.length === 0) return sendError(reply, new HttpError(404, 'not_found', `no route for ${shown}`));
    reply.header('allow', allowed.join(', '));
    return sendError(
      reply,
      new HttpError(405, 'method_not_allowed', `no route for ${shown}; this path answers ${allowed.join(', ')}`),
    );
  });
}

/** A browser asking for a dashboard page (not its API or assets): sent to the login form instead of a JSON 401. */
function wantsLoginPage(request: FastifyRequest, path: string): boolean {
  if (request.method !== 'GET' || !/\btext\/html\b/.test(request.headers.accept ?? '')) return false;
  return !path.startsWith(`${DASHBOARD_PATH}/api/`) && !path.startsWith(`${DASHBOARD_PATH}/static/`);
}

/**
 * A browser's login cookie under /admin/queues (as an operator) or /inbox (as the token it logged
 * in with); the login forms themselves are open. `undefined`: not a page with a login, or none
 * given (then a browser asking for a page is sent to the form).
 */
function cookiePrincipal(
  request: FastifyRequest,
  reply: FastifyReply,
  logins: { dashboardKey: () => string; inbox: InboxAuth },
): Principal | 'open' | 'redirected' | undefined {
  const path = request.url.split('?')[0] ?? '';
  if (isDashboardPath(request.url)) {
    if (path === LOGIN_PATH || path === LOGOUT_PATH) return 'open';
    if (createDashboardSessions(logins.dashboardKey()).isValid(request.headers.cookie)) return LEGACY_PRINCIPAL;
    if (wantsLoginPage(request, path)) return redirectTo(reply, LOGIN_PATH);
  } else if (isInboxPath(request.url)) {
    if (path === INBOX_LOGIN_PATH || path === INBOX_LOGOUT_PATH) return 'open';
    const principal = logins.inbox.principalOf(request.headers.cookie);
    if (principal) return principal;
    if (request.method === 'GET' && /\btext\/html\b/.test(request.headers.accept ?? ''))
      return redirectTo(reply, INBOX_LOGIN_PATH);
  }
  return undefined;
}

function redirectTo(reply: FastifyReply, path: string): 'redirected' {
  reply.redirect(path, 303);
  return 'redirected';
}

/**
 * TD_API_TOKEN or TD_API_TOKENS: every route but the public ones needs `Authorization: Bearer
 * <token>`, which says who the request speaks for; under /admin/queues and /inbox a login cookie
 * of their forms counts too.
 */
function installTokenCheck(
  app: FastifyInstance,
  principalOf: (authorization: unknown) => Principal | null,
  logins: { dashboardKey: () => string; inbox: InboxAuth },
): void {
  app.addHook('onRequest', async function checkBearerToken(request, reply) {
    if (PUBLIC_ROUTES.has(request.routeOptions.url ?? '')) return;
    const principal = principalOf(request.headers.authorization);
    if (principal) return setPrincipal(request, principal);
    const fromCookie = cookiePrincipal(request, reply, logins);
    if (fromCookie === 'open') return;
    if (fromCookie === 'redirected') return reply;
    if (fromCookie) return setPrincipal(request, fromCookie);
    // Answered here, not thrown: a plugin's own error handler (bull-board's, under
    // /admin/queues) would otherwise reshape the 401 and drop WWW-Authenticate.
    return sendError(
      reply,
      new HttpError(401, 'unauthorized', 'this API needs an Authorization: Bearer <token> header with a valid token'),
    );
  });
}

/** The bearer check of TD_API_TOKEN (one token: every tenant, every route) or TD_API_TOKENS; the inbox's logins (none without tokens). */
function installAuth(app: FastifyInstance, options: BuildServerOptions): InboxAuth | undefined {
  if (options.apiToken && options.apiTokens) throw new Error('set apiToken or apiTokens, not both');
  const table = options.apiTokens;
  let inbox: InboxAuth | undefined;
  if (table) {
    inbox = createInboxAuth(tokenTableLookup(table));
    installTokenCheck(app, (a) => table.principalOf(a), {
      dashboardKey: () => `tokens:${table.operatorKey()}`,
      inbox,
    });
  } else if (options.apiToken) {
    const token = options.apiToken;
    const isAuthorized = createBearerCheck(token);
    inbox = createInboxAuth(singleTokenLookup(token));
    installTokenCheck(app, (a) => (isAuthorized(a) ? LEGACY_PRINCIPAL : null), { dashboardKey: () => token, inbox });
  }
  installAccessChecks(app, options.dispatcher, (url) => PUBLIC_ROUTES.has(url));
  return inbox;
}

/** The coordinator's HTTP API (API.md) on fastify, not yet listening. */
export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  const onInternalError = options.onInternalError ?? reportToStderr;
  const timeouts = resolveHttpTimeouts(options.timeouts);
  const app = createFastify(options, timeouts);
  installRawServerAnswers(app.server);
  const allowedMethods = trackRouteMethods(app);
  installErrorAnswers(app, allowedMethods, onInternalError);

  const inboxAuth = installAuth(app, options);

  if (options.tracing) installRequestSpans(app, options.tracing);

  const streams = new Set<SseStream>();
  const closing = { value: false };
  // Open event streams would keep server.close() waiting forever; end them first.
  app.addHook('preClose', async function endEventStreams() {
    closing.value = true;
    for (const stream of [...streams]) stream.end();
    await options.mcp?.close();
  });

  const ctx: RouteContext = { dispatcher: options.dispatcher, streams, closing, sse: options.sse ?? {} };
  await registerOperationRoutes(app, ctx, options.metricsText);
  await registerSessionRoutes(app, ctx);
  await registerRoundRoutes(app, ctx);
  await registerEventRoutes(app, ctx);
  await registerConfirmationRoutes(app, ctx);
  await registerInputRoutes(app, ctx);
  await registerInboxRoutes(app, ctx, { auth: inboxAuth });
  if (options.mcp) await registerMcpRoutes(app, options.mcp);
  if (options.extraRoutes) await options.extraRoutes(app);
  return app;
}
