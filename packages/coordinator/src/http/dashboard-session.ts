import { createHmac, timingSafeEqual } from 'node:crypto';

/** Where the queue dashboard (bull-board) is mounted. */
export const DASHBOARD_PATH = '/admin/queues';
/** Paths of the login form and of logging out, under DASHBOARD_PATH (open without a token). */
export const LOGIN_PATH = `${DASHBOARD_PATH}/login`;
export const LOGOUT_PATH = `${DASHBOARD_PATH}/logout`;

/** True for a request path at or under DASHBOARD_PATH. */
export function isDashboardPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === DASHBOARD_PATH || path.startsWith(`${DASHBOARD_PATH}/`);
}

/** Name of the cookie a browser gets from the dashboard's login form. */
export const DASHBOARD_COOKIE = 'td_dashboard';
/** How long one login lasts. */
export const DASHBOARD_SESSION_MS = 12 * 60 * 60_000;
/** Clock difference between coordinators that a cookie issued by another one is allowed. */
const CLOCK_SKEW_MS = 60_000;

export interface DashboardSessions {
  /** A cookie value for a login at `now`: `v1.<issued ms>.<HMAC>`. */
  issue(now?: number): string;
  /** True when the request's Cookie header carries a session issued less than DASHBOARD_SESSION_MS ago. */
  isValid(cookieHeader: unknown, now?: number): boolean;
}

/** The value of cookie `name` in a Cookie header, if present. */
export function cookieValue(header: unknown, name: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Stateless dashboard sessions: the cookie holds its issue time and an HMAC of it keyed by
 * TD_API_TOKEN, so it never carries the token itself, every coordinator of a deployment accepts
 * it (same token), and changing the token ends every session.
 */
export function createDashboardSessions(token: string): DashboardSessions {
  const mac = (issued: string) => createHmac('sha256', token).update(`td-dashboard:${issued}`).digest();
  return {
    issue: (now = Date.now()) => `v1.${now}.${mac(String(now)).toString('base64url')}`,
    isValid(cookieHeader, now = Date.now()) {
      const value = cookieValue(cookieHeader, DASHBOARD_COOKIE);
      const match = value ? /^v1\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(value) : null;
      if (!match) return false;
      const issued = Number(match[1]);
      if (issued > now + CLOCK_SKEW_MS || now - issued > DASHBOARD_SESSION_MS) return false;
      return timingSafeEqual(Buffer.from(match[2] as string, 'base64url'), mac(match[1] as string));
    },
  };
}
