import { hashCanonical } from '@tool-dispatch/shared';
import type { Grant, GrantMatch } from '../model.js';

/** Longest TTL a grant may ask for (30 days); longer is 400. Without ttlMs a grant lasts as long as its session. */
export const MAX_GRANT_TTL_MS = 30 * 24 * 60 * 60_000;
/** Most grants one session keeps; a new one beyond is 409. */
export const MAX_GRANTS_PER_SESSION = 100;

/** The digest an `args` grant binds: SHA-256 of the args' canonical JSON, so key order and spelling do not matter. */
export const argsHashOf = (args: unknown): string => hashCanonical(args);

/** True while the grant lasts at `now` (no expiresAt: until revoked or its session ends). */
export function grantLive(grant: Pick<Grant, 'expiresAt'>, now: number): boolean {
  return grant.expiresAt === undefined || Date.parse(grant.expiresAt) > now;
}

/**
 * API.md v1.2 Grants: a grant approves a later call of its tool (`args`: with the same canonical
 * args), in its session (`run`: in that run only), until it expires.
 */
export function grantCovers(grant: Grant, match: GrantMatch): boolean {
  if (grant.tool !== match.tool || !grantLive(grant, match.now)) return false;
  if (grant.scope === 'args' && grant.argsHash !== match.argsHash) return false;
  return grant.run === undefined || grant.run === match.run;
}

/** Of the grants that cover a call, the one that approves it: the narrowest (args before tool), then the oldest. */
export function pickGrant(grants: readonly Grant[], match: GrantMatch): Grant | undefined {
  const covering = grants.filter((g) => grantCovers(g, match));
  covering.sort((a, b) => rank(a) - rank(b) || a.createdAt.localeCompare(b.createdAt));
  return covering[0];
}

const rank = (g: Grant) => (g.scope === 'args' ? 0 : 2) + (g.run === undefined ? 1 : 0);
