import { tryParseJson } from '@tool-dispatch/shared/redis';
import type { Grant, GrantMatch } from '../model.js';
import { grantLive, MAX_GRANTS_PER_SESSION } from '../rules/grants.js';
import { type RedisClient, runScript } from '../support/redis-client.js';
import { addGrantScript, parseAddGrantReply } from './lua/addGrant-1.lua.js';
import { parseUseGrantReply, useGrantScript } from './lua/useGrant-1.lua.js';

/** A session's grants in Redis: one hash in the session's slot (`RedisKeys.grants`), living as long as the session. */
export interface GrantsAt {
  redis: RedisClient;
  key: string;
  ttlMs: number;
}

/** A stored grant as the API shows it (its internal `expiresMs` left out). */
function grantOf(json: string): Grant | undefined {
  const parsed = tryParseJson(json) as (Grant & { expiresMs?: number }) | undefined;
  if (!parsed || typeof parsed.grantId !== 'string') return undefined;
  const { expiresMs: _e, ...grant } = parsed;
  return grant;
}

/** Stores a grant unless the session holds MAX_GRANTS_PER_SESSION live ones (false then). */
export async function addGrant(at: GrantsAt, grant: Grant): Promise<boolean> {
  const expiresMs = grant.expiresAt === undefined ? undefined : Date.parse(grant.expiresAt);
  const stored = JSON.stringify({ ...grant, ...(expiresMs === undefined ? {} : { expiresMs }) });
  const args = [grant.grantId, stored, Date.now(), MAX_GRANTS_PER_SESSION, at.ttlMs];
  return parseAddGrantReply(await runScript(at.redis, addGrantScript, [at.key], args));
}

/** The session's live grants, oldest first. */
export async function listGrants(at: GrantsAt): Promise<Grant[]> {
  const now = Date.now();
  const all = Object.values(await at.redis.hgetall(at.key));
  const grants = all.map(grantOf).filter((g): g is Grant => g !== undefined && grantLive(g, now));
  return grants.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The narrowest live grant covering the call, its use counted in the same script; null when none. */
export async function useGrant(at: GrantsAt, match: GrantMatch): Promise<Grant | null> {
  const args = [match.tool, match.argsHash, match.run, match.now];
  const reply = parseUseGrantReply(await runScript(at.redis, useGrantScript, [at.key], args));
  return reply === null ? null : (grantOf(reply) ?? null);
}

/** Revokes a grant: false when the session has none of that id. */
export async function revokeGrant(at: GrantsAt, grantId: string): Promise<boolean> {
  return (await at.redis.hdel(at.key, grantId)) === 1;
}
