import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createTokenCheck } from './auth.js';
import { DASHBOARD_COOKIE, DASHBOARD_PATH, DASHBOARD_SESSION_MS, type DashboardSessions } from './dashboard-session.js';

const LOGIN_SUFFIX = '/login';
const LOGOUT_SUFFIX = '/logout';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The login page: one form, no script, no asset from anywhere. */
export function loginPage(title: string, problem?: string, label = 'API token (TD_API_TOKEN)'): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}: log in</title>
<style>body{font-family:system-ui,sans-serif;background:#151a21;color:#d5dbe3;display:flex;justify-content:center;padding-top:15vh}
form{display:flex;flex-direction:column;gap:.75rem;min-width:20rem}input,button{font:inherit;padding:.5rem}
.problem{color:#ff8c8c}</style></head>
<body><form method="post" action="login"><h1>${escapeHtml(title)}</h1>
<label for="token">${escapeHtml(label)}</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
${problem ? `<p class="problem" role="alert">${escapeHtml(problem)}</p>` : ''}<button type="submit">Log in</button>
</form></body></html>
`;
}

/** Where a login form lives and what it gives: the scope's prefix is the cookie's path and the page logged in to. */
export interface LoginOptions {
  title: string;
  /** The scope's prefix (`/admin/queues`, `/inbox`). */
  basePath: string;
  cookie: string;
  /** What the form asks for. */
  label: string;
  /** The cookie value for a token that may log in, or the problem shown on the form. */
  logIn(token: string | undefined): { cookie: string } | { problem: string };
}

function cookieHeader(
  request: FastifyRequest,
  at: Pick<LoginOptions, 'basePath' | 'cookie'>,
  value: string,
  maxAgeS: number,
): string {
  // Secure only over TLS to this process: a plain-HTTP loopback or port-forward keeps working.
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${at.cookie}=${value}; Path=${at.basePath}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure}`;
}

function formToken(body: unknown): string | undefined {
  const text = typeof body === 'string' ? body : '';
  return new URLSearchParams(text).get('token') ?? undefined;
}

function sendLoginPage(reply: FastifyReply, status: number, at: LoginOptions, problem?: string): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(loginPage(at.title, problem, at.label));
}

/**
 * Registered in a scope prefixed with `basePath`: GET/POST `<base>/login` (a same-origin form
 * taking a token; one that may log in gets an HttpOnly SameSite=Strict session cookie and a
 * redirect to `<base>/`) and GET `<base>/logout`. The queue dashboard's and the inbox's.
 */
export function registerTokenLogin(app: FastifyInstance, options: LoginOptions): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    function parseLoginForm(_request, body, done) {
      done(null, body);
    },
  );
  app.get(LOGIN_SUFFIX, async function loginForm(_request, reply) {
    return sendLoginPage(reply, 200, options);
  });
  app.post(LOGIN_SUFFIX, async function logIn(request, reply) {
    const out = options.logIn(formToken(request.body));
    if ('problem' in out) return sendLoginPage(reply, 401, options, out.problem);
    reply.header('set-cookie', cookieHeader(request, options, out.cookie, DASHBOARD_SESSION_MS / 1000));
    return reply.code(303).header('cache-control', 'no-store').redirect(`${options.basePath}/`, 303);
  });
  app.get(LOGOUT_SUFFIX, async function logOut(request, reply) {
    reply.header('set-cookie', cookieHeader(request, options, '', 0));
    return reply.redirect(`${options.basePath}${LOGIN_SUFFIX}`, 303);
  });
}

/** The queue dashboard's login (TD_API_TOKEN), in a scope prefixed with DASHBOARD_PATH. */
export function registerLoginRoutes(
  app: FastifyInstance,
  options: { title: string; token: string; sessions: DashboardSessions },
): void {
  const isToken = createTokenCheck(options.token);
  registerTokenLogin(app, {
    title: options.title,
    basePath: DASHBOARD_PATH,
    cookie: DASHBOARD_COOKIE,
    label: 'API token (TD_API_TOKEN)',
    logIn: (token) =>
      isToken(token) ? { cookie: options.sessions.issue() } : { problem: 'That is not the API token.' },
  });
}
