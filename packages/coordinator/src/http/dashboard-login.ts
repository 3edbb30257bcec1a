import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createTokenCheck } from './auth.js';
import {
  DASHBOARD_COOKIE,
  DASHBOARD_PATH,
  DASHBOARD_SESSION_MS,
  type DashboardSessions,
  LOGIN_PATH,
  LOGOUT_PATH,
} from './dashboard-session.js';

const LOGIN_SUFFIX = LOGIN_PATH.slice(DASHBOARD_PATH.length);
const LOGOUT_SUFFIX = LOGOUT_PATH.slice(DASHBOARD_PATH.length);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The login page: one form, no script, no asset from anywhere. */
export function loginPage(title: string, problem?: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}: log in</title>
<style>body{font-family:system-ui,sans-serif;background:#151a21;color:#d5dbe3;display:flex;justify-content:center;padding-top:15vh}
form{display:flex;flex-direction:column;gap:.75rem;min-width:20rem}input,button{font:inherit;padding:.5rem}
.problem{color:#ff8c8c}</style></head>
<body><form method="post" action="login"><h1>${escapeHtml(title)}</h1>
<label for="token">API token (TD_API_TOKEN)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
${problem ? `<p class="problem" role="alert">${escapeHtml(problem)}</p>` : ''}<button type="submit">Log in</button>
</form></body></html>
`;
}

function cookieHeader(request: FastifyRequest, value: string, maxAgeS: number): string {
  // Secure only over TLS to this process: a plain-HTTP loopback or port-forward keeps working.
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${DASHBOARD_COOKIE}=${value}; Path=${DASHBOARD_PATH}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure}`;
}

function formToken(body: unknown): string | undefined {
  const text = typeof body === 'string' ? body : '';
  return new URLSearchParams(text).get('token') ?? undefined;
}

function sendLoginPage(reply: FastifyReply, status: number, title: string, problem?: string): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(loginPage(title, problem));
}

/**
 * Registered in a scope prefixed with DASHBOARD_PATH. GET/POST `<base>/login` (a same-origin form taking TD_API_TOKEN; the right token gets an
 * HttpOnly SameSite=Strict session cookie and a redirect to the dashboard) and GET `<base>/logout`.
 */
export function registerLoginRoutes(
  app: FastifyInstance,
  options: { title: string; token: string; sessions: DashboardSessions },
): void {
  const { title, sessions } = options;
  const isToken = createTokenCheck(options.token);
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    function parseLoginForm(_request, body, done) {
      done(null, body);
    },
  );
  app.get(LOGIN_SUFFIX, async function dashboardLoginForm(_request, reply) {
    return sendLoginPage(reply, 200, title);
  });
  app.post(LOGIN_SUFFIX, async function dashboardLogin(request, reply) {
    if (!isToken(formToken(request.body))) return sendLoginPage(reply, 401, title, 'That is not the API token.');
    reply.header('set-cookie', cookieHeader(request, sessions.issue(), DASHBOARD_SESSION_MS / 1000));
    return reply.code(303).header('cache-control', 'no-store').redirect(`${DASHBOARD_PATH}/`, 303);
  });
  app.get(LOGOUT_SUFFIX, async function dashboardLogout(request, reply) {
    reply.header('set-cookie', cookieHeader(request, '', 0));
    return reply.redirect(LOGIN_PATH, 303);
  });
}
