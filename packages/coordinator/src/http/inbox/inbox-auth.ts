import { createBearerCheck } from '../auth.js';
import { createSignedSessions } from '../dashboard-session.js';
import { LEGACY_PRINCIPAL, type Principal, type TokenTable } from '../tokens.js';

/** Where the approvals inbox is served. */
export const INBOX_PATH = '/inbox';
/** The inbox's login form and logout, open without a token. */
export const INBOX_LOGIN_PATH = `${INBOX_PATH}/login`;
export const INBOX_LOGOUT_PATH = `${INBOX_PATH}/logout`;
/** Name of the cookie a browser gets from the inbox's login form. */
export const INBOX_COOKIE = 'td_inbox';

/** True for a request path at or under INBOX_PATH. */
export function isInboxPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === INBOX_PATH || path.startsWith(`${INBOX_PATH}/`);
}

/** Who may log in to the inbox, and who a login cookie speaks for. */
export interface InboxAuth {
  /** A session cookie for a token that may log in (any role), or why not. */
  logIn(token: string | undefined): { cookie: string; principal: Principal } | { problem: string };
  /** Who the Cookie header's inbox session speaks for, or null. */
  principalOf(cookieHeader: unknown): Principal | null;
}

interface TokenLookup {
  byToken(token: string): Principal | null;
  named(name: string): { principal: Principal; key: string } | null;
}

/** The tokens of TD_API_TOKENS: each login cookie names its token and is keyed by its digest. */
export function tokenTableLookup(table: TokenTable): TokenLookup {
  return { byToken: (token) => table.principalOf(`Bearer ${token}`), named: (name) => table.named(name) };
}

/** TD_API_TOKEN alone: one operator, every tenant, cookies keyed by the token. */
export function singleTokenLookup(token: string): TokenLookup {
  const isAuthorized = createBearerCheck(token);
  return {
    byToken: (candidate) => (isAuthorized(`Bearer ${candidate}`) ? LEGACY_PRINCIPAL : null),
    named: (name) => (name === LEGACY_PRINCIPAL.name ? { principal: LEGACY_PRINCIPAL, key: token } : null),
  };
}

/** The inbox's logins over the dashboard's signed sessions, each naming its token (role and tenant read at each request). */
export function createInboxAuth(lookup: TokenLookup): InboxAuth {
  const sessions = createSignedSessions({
    cookie: INBOX_COOKIE,
    purpose: 'td-inbox',
    keyOf: (name) => (name === '' ? undefined : lookup.named(name)?.key),
  });
  return {
    logIn(token) {
      const principal = token && /^\S+$/.test(token) ? lookup.byToken(token) : null;
      if (!principal) return { problem: 'That token is not one of this deployment’s API tokens.' };
      return { cookie: sessions.issue(principal.name), principal };
    },
    principalOf(cookieHeader) {
      const name = sessions.nameOf(cookieHeader);
      return name ? (lookup.named(name)?.principal ?? null) : null;
    },
  };
}
