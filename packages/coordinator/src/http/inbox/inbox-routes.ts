import type { FastifyInstance, FastifyReply } from 'fastify';
import { principalOf } from '../access.js';
import { pathId, type RouteContext, requireSession } from '../context.js';
import { registerTokenLogin } from '../dashboard-login.js';
import { DASHBOARD_CSP } from '../dashboard-session.js';
import { HttpError } from '../errors.js';
import { openSseStream } from '../sse.js';
import { parseConfirmationBody, parseInputBody } from '../validate.js';
import { INBOX_COOKIE, INBOX_PATH, type InboxAuth } from './inbox-auth.js';
import { runContext } from './inbox-history.js';
import { inboxPage, loadInboxAssets } from './inbox-page.js';
import { type InboxEvent, InboxStreams } from './inbox-streams.js';

export interface InboxRouteOptions {
  /** Logins when the API has tokens; without, the page is open as the API is. */
  auth?: InboxAuth | undefined;
}

function sendPage(reply: FastifyReply, loginEnabled: boolean): FastifyReply {
  return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(inboxPage({ loginEnabled }));
}

/** The page, its files and its login. */
function registerPageRoutes(scope: FastifyInstance, options: InboxRouteOptions): void {
  const assets = loadInboxAssets();
  const { auth } = options;
  if (auth)
    registerTokenLogin(scope, {
      title: 'tool-dispatch inbox',
      basePath: INBOX_PATH,
      cookie: INBOX_COOKIE,
      label: 'API token (approver, backend or operator)',
      logIn: (token) => auth.logIn(token),
    });
  // Under the prefix, '/' serves both /inbox and /inbox/.
  scope.get('/', async function inboxPageRoute(_request, reply) {
    return sendPage(reply, auth !== undefined);
  });
  scope.get('/assets/:file', async function inboxAsset(request, reply) {
    const file = (request.params as { file?: string }).file ?? '';
    const asset = assets.get(file);
    if (!asset) throw new HttpError(404, 'not_found', `no inbox asset ${file.slice(0, 100)}`);
    return reply.header('cache-control', 'no-cache').type(asset.type).send(asset.body);
  });
}

/** The live list: a snapshot, then what is asked and what goes, for the page's token. */
function registerStreamRoute(scope: FastifyInstance, ctx: RouteContext, streams: InboxStreams): void {
  let seq = 0;
  scope.get('/api/stream', { exposeHeadRoute: false }, async function inboxStream(request, reply) {
    if (ctx.closing.value)
      throw new HttpError(503, 'shutting_down', 'the coordinator is shutting down; reconnect to another');
    const principal = principalOf(request);
    reply.hijack();
    const sse = openSseStream(reply.raw, ctx.sse);
    ctx.streams.add(sse);
    const send = (event: InboxEvent) => sse.send({ id: String(++seq), name: event.name, data: event.data });
    const close = await streams.open({ principal, send }).catch(() => undefined);
    if (!close) return sse.end();
    sse.onClose(function closeInboxPage() {
      ctx.streams.delete(sse);
      close();
    });
    return reply;
  });
}

/** Answers from the page, as the token logged in (tenant checks as for /v1: another tenant's session is 404). */
function registerAnswerRoutes(scope: FastifyInstance, { dispatcher }: RouteContext): void {
  scope.get('/api/sessions/:session/runs/:run/history', async function inboxRunHistory(request) {
    const session = pathId(request, 'session', 'the session id');
    const run = pathId(request, 'run', 'the run id');
    await requireSession(dispatcher, session);
    return { history: runContext(await dispatcher.history(session), run) };
  });
  scope.post('/api/sessions/:session/confirmations/:confirmation', async function inboxAnswerConfirmation(request) {
    const session = pathId(request, 'session', 'the session id');
    const id = pathId(request, 'confirmation', 'the confirmation id');
    const { approve, grant } = parseConfirmationBody(request.body);
    await requireSession(dispatcher, session);
    const who = principalOf(request).name;
    const answered = await dispatcher.answerConfirmation(session, id, {
      approve,
      remember: false,
      who,
      ...(grant ? { grant } : {}),
    });
    return { confirmationId: answered.confirmationId, approve, ...(answered.grant ? { grant: answered.grant } : {}) };
  });
  scope.post('/api/sessions/:session/inputs/:input', async function inboxAnswerInput(request) {
    const session = pathId(request, 'session', 'the session id');
    const id = pathId(request, 'input', 'the input id');
    const answer = parseInputBody(request.body);
    await requireSession(dispatcher, session);
    return dispatcher.answerInput(session, id, answer);
  });
}

/**
 * The approvals inbox at /inbox (docs/operations.md): what waits for a person across the
 * sessions the token sees, live, and the answers. Same CSP and no outside loads as the queue dashboard.
 */
export async function registerInboxRoutes(app: FastifyInstance, ctx: RouteContext, options: InboxRouteOptions) {
  const streams = new InboxStreams(ctx.dispatcher);
  app.addHook('onClose', async function closeInboxStreams() {
    streams.close();
  });
  await app.register(
    async function inbox(scope) {
      scope.addHook('onSend', async function isolateInboxPage(_request, reply, payload) {
        reply.header('content-security-policy', DASHBOARD_CSP);
        reply.header('referrer-policy', 'no-referrer');
        reply.header('x-content-type-options', 'nosniff');
        return payload;
      });
      registerPageRoutes(scope, options);
      registerStreamRoute(scope, ctx, streams);
      registerAnswerRoutes(scope, ctx);
    },
    { prefix: INBOX_PATH },
  );
}
