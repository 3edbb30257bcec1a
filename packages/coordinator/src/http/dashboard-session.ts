import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Every dashboard (and inbox) answer may load only from this origin: bull-board's page links fonts from a
 * public CDN (stripped below), and an operator's browser should not tell a third party it is open.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // bull-board's loading screen and components set inline styles.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

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

/** Login cookies that name who logged in: the queue dashboard's (one token, no name) and the inbox's (a token's name). */
export interface SignedSessions {
  /** A cookie value for `name` logging in at `now`: `v1.<issued ms>[.<name, base64url>].<HMAC>`. */
  issue(name: string, now?: number): string;
  /** The name a Cookie header's session was issued to, when it is valid and less than `lifetimeMs` old. */
  nameOf(cookieHeader: unknown, now?: number): string | undefined;
}

/**
 * The bytes of unpadded base64url `text` when it is the one encoding of them, else undefined. The
 * last character of an encoding whose length is not a multiple of 4 carries unused bits (2 for a
 * 32-byte MAC): decoding ignores them, so up to 4 texts decode to the same bytes. A cookie is
 * taken only as it was issued, never in another spelling of the same bytes.
 */
export function canonicalBase64url(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

const SIGNED = /^v1\.(\d{1,15})\.(?:([A-Za-z0-9_-]{1,200})\.)?([A-Za-z0-9_-]{43})$/;

/**
 * Stateless login sessions: the cookie holds its issue time, the name it was issued to and an
 * HMAC of both keyed by a secret of that name (`keyOf`: the token, or its digest), so it never
 * carries a token, every coordinator of a deployment accepts it, and changing or removing the
 * token ends its sessions. `purpose` keeps one kind of cookie from passing for another.
 */
export function createSignedSessions(options: {
  cookie: string;
  purpose: string;
  keyOf: (name: string) => string | undefined;
  lifetimeMs?: number;
}): SignedSessions {
  const lifetimeMs = options.lifetimeMs ?? DASHBOARD_SESSION_MS;
  // The dashboard's unnamed cookies keep their pre-inbox message, so a login survives the upgrade.
  const message = (issued: string, name: string) =>
    name === '' ? `${options.purpose}:${issued}` : `${options.purpose}:${issued}:${name}`;
  const mac = (key: string, issued: string, name: string) =>
    createHmac('sha256', key).update(message(issued, name)).digest();
  return {
    issue(name, now = Date.now()) {
      const key = options.keyOf(name);
      if (key === undefined) throw new Error(`no key for ${name}`);
      const shownName = name === '' ? '' : `${Buffer.from(name).toString('base64url')}.`;
      return `v1.${now}.${shownName}${mac(key, String(now), name).toString('base64url')}`;
    },
    nameOf(cookieHeader, now = Date.now()) {
      const value = cookieValue(cookieHeader, options.cookie);
      const match = value ? SIGNED.exec(value) : null;
      if (!match) return undefined;
      const [, issuedText = '', encodedName, given = ''] = match;
      const issued = Number(issuedText);
      if (issued > now + CLOCK_SKEW_MS || now - issued > lifetimeMs) return undefined;
      const nameBytes = encodedName === undefined ? Buffer.alloc(0) : canonicalBase64url(encodedName);
      const givenMac = canonicalBase64url(given);
      if (!nameBytes || !givenMac) return undefined;
      const name = nameBytes.toString();
      const key = options.keyOf(name);
      if (key === undefined) return undefined;
      return timingSafeEqual(givenMac, mac(key, issuedText, name)) ? name : undefined;
    },
  };
}

/**
 * The queue dashboard's sessions: unnamed signed sessions keyed by TD_API_TOKEN (or the operators'
 * digests under TD_API_TOKENS), as an operator.
 */
export function createDashboardSessions(token: string): DashboardSessions {
  const signed = createSignedSessions({ cookie: DASHBOARD_COOKIE, purpose: 'td-dashboard', keyOf: () => token });
  return {
    issue: (now = Date.now()) => signed.issue('', now),
    isValid: (cookieHeader, now = Date.now()) => signed.nameOf(cookieHeader, now) === '',
  };
}
