import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, isValidId } from '@tool-dispatch/shared';

/** What a token may do (API.md v1.2 "Tenants, tokens and approval grants"). */
export type Role = 'backend' | 'approver' | 'operator';

/** Who a request speaks for: the token's name, its tenant (`*`: every tenant) and its role. */
export interface Principal {
  name: string;
  tenant: string;
  role: Role;
}

/** The principal of TD_API_TOKEN alone (and of a server without tokens): every tenant, every route, as before v1.2. */
export const LEGACY_PRINCIPAL: Principal = { name: 'api-token', tenant: '*', role: 'operator' };
/** The principal of a server without any token configured. */
export const OPEN_PRINCIPAL: Principal = { name: 'anonymous', tenant: '*', role: 'operator' };

interface TokenEntry extends Principal {
  digest: Buffer;
}

/** Most tokens one file may name. */
export const MAX_TOKENS = 1000;
const ROLES: readonly Role[] = ['backend', 'approver', 'operator'];
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

/** One entry of the file, checked; `where` names it in errors. */
function parseEntry(raw: unknown, where: string): TokenEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where} is not an object`);
  const e = raw as Record<string, unknown>;
  const extra = Object.keys(e).filter((k) => !['name', 'sha256', 'tenant', 'role'].includes(k));
  if (extra.length > 0) throw new Error(`${where} has unknown field(s) ${extra.join(', ')}`);
  if (typeof e.name !== 'string' || !NAME.test(e.name))
    throw new Error(`${where}: "name" must match ${NAME.source}, got ${JSON.stringify(e.name)}`);
  if (typeof e.sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(e.sha256))
    throw new Error(`${where} (${e.name}): "sha256" must be the 64 hex digits of the token's SHA-256`);
  if (typeof e.role !== 'string' || !ROLES.includes(e.role as Role))
    throw new Error(`${where} (${e.name}): "role" must be one of ${ROLES.join(', ')}, got ${JSON.stringify(e.role)}`);
  const role = e.role as Role;
  if (typeof e.tenant !== 'string' || (e.tenant !== '*' && !isValidId(e.tenant)))
    throw new Error(`${where} (${e.name}): "tenant" must be a tenant id or "*", got ${JSON.stringify(e.tenant)}`);
  if (role === 'operator' && e.tenant !== '*')
    throw new Error(`${where} (${e.name}): an operator's "tenant" must be "*"`);
  if (role !== 'operator' && e.tenant === '*')
    throw new Error(`${where} (${e.name}): only an operator may have tenant "*"; a ${role} names one tenant`);
  return { name: e.name, tenant: e.tenant, role, digest: Buffer.from(e.sha256, 'hex') };
}

/** The text of a TD_API_TOKENS file, checked: `{"tokens": [{name, sha256, tenant, role}]}`. */
export function parseTokenFile(text: string): TokenEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`not JSON: ${(e as Error).message}`);
  }
  const tokens = (doc as { tokens?: unknown } | null)?.tokens;
  if (typeof doc !== 'object' || doc === null || !Array.isArray(tokens))
    throw new Error('expected {"tokens": [{"name", "sha256", "tenant", "role"}, ...]}');
  if (tokens.length === 0) throw new Error('"tokens" is empty: nobody could call the API');
  if (tokens.length > MAX_TOKENS) throw new Error(`"tokens" names ${tokens.length} tokens; at most ${MAX_TOKENS}`);
  const entries = tokens.map((t, i) => parseEntry(t, `tokens[${i}]`));
  const seen = new Set<string>();
  for (const e of entries) {
    const digest = e.digest.toString('hex');
    if (seen.has(e.name)) throw new Error(`two tokens are named ${e.name}`);
    if (seen.has(digest)) throw new Error(`token ${e.name} has the same sha256 as another`);
    seen.add(e.name).add(digest);
  }
  return entries;
}

/** Who a bearer token is, or null. Every entry is compared in constant time, so timing says nothing of which matched. */
export interface TokenTable {
  principalOf(authorization: unknown): Principal | null;
  /** Re-reads the file (SIGHUP); a bad file keeps the tokens in force and throws saying why. */
  reload(): void;
  /** The operators' digests, the key of the dashboard's login cookies. */
  operatorKey(): string;
  /** The token named `name` and its digest (hex, the key of its inbox login cookies), or null. */
  named(name: string): { principal: Principal; key: string } | null;
}

/** Reads TD_API_TOKENS at `file`; a ConfigError (exit 2) naming the problem when it is unusable. */
export function loadTokenTable(file: string): TokenTable {
  const read = () => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new ConfigError(`TD_API_TOKENS: cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      return parseTokenFile(text);
    } catch (e) {
      throw new ConfigError(`TD_API_TOKENS: ${file}: ${(e as Error).message}`);
    }
  };
  let entries = read();
  return {
    principalOf(authorization) {
      if (typeof authorization !== 'string') return null;
      const token = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)?.[1];
      if (!token) return null;
      const digest = createHash('sha256').update(token, 'utf8').digest();
      let found: TokenEntry | null = null;
      for (const e of entries) if (timingSafeEqual(digest, e.digest) && !found) found = e;
      return found ? { name: found.name, tenant: found.tenant, role: found.role } : null;
    },
    reload() {
      entries = read();
    },
    named(name) {
      const e = entries.find((t) => t.name === name);
      return e ? { principal: { name: e.name, tenant: e.tenant, role: e.role }, key: e.digest.toString('hex') } : null;
    },
    operatorKey() {
      return entries
        .filter((e) => e.role === 'operator')
        .map((e) => e.digest.toString('hex'))
        .join(',');
    },
  };
}
