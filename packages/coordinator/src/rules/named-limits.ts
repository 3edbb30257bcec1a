import { ConfigError } from '@tool-dispatch/shared';

/** One limit of `TD_LIMITS` (API.md): places in flight at most, calls started per window at most. */
export interface NamedLimit {
  concurrency?: number;
  rate?: { count: number; windowMs: number };
}

/** `TD_LIMITS` resolved: each entry a limit of its own, shared by every call it names. */
export interface NamedLimits {
  /** `[pattern, matcher, limit]`: a glob's limit is one limit shared by every tool it matches. */
  tools: { pattern: string; matches: (name: string) => boolean; limit: NamedLimit }[];
  servers: Map<string, NamedLimit>;
  /** A tenant's own entry wins over `*` (each tenant its own limit). */
  tenants: Map<string, NamedLimit>;
  /** How long a call waits for a named limit before it ends `rate_limited`. */
  maxWaitMs: number;
}

export const DEFAULT_MAX_WAIT_MS = 30_000;
const WINDOWS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };
const MAX_COUNT = 1_000_000;

/** Parses and checks a `TD_LIMITS` file's text; a problem is a ConfigError naming it (`source`: the file). */
export function parseNamedLimits(text: string, source: string): NamedLimits {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`TD_LIMITS ${source} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const where = `TD_LIMITS ${source}`;
  const top = objectAt(raw, where);
  const known = new Set(['tools', 'servers', 'tenants', 'maxWaitMs']);
  for (const key of Object.keys(top))
    if (!known.has(key)) throw new ConfigError(`${where}: unknown key "${key}" (tools, servers, tenants, maxWaitMs)`);
  const section = (key: string) =>
    Object.entries(top[key] === undefined ? {} : objectAt(top[key], `${where}: "${key}"`)).map(
      ([name, value]) => [name, limitAt(value, `${where}: ${key}["${name}"]`)] as const,
    );
  const maxWaitMs = top.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  if (typeof maxWaitMs !== 'number' || !Number.isInteger(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > 3_600_000)
    throw new ConfigError(`${where}: maxWaitMs must be an integer from 0 to 3600000, got ${JSON.stringify(maxWaitMs)}`);
  return {
    tools: section('tools').map(([pattern, limit]) => ({ pattern, matches: globMatcher(pattern), limit })),
    servers: new Map(section('servers')),
    tenants: new Map(section('tenants')),
    maxWaitMs,
  };
}

function objectAt(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(`${where} must be a JSON object, got ${JSON.stringify(value)}`);
  return value as Record<string, unknown>;
}

function limitAt(value: unknown, where: string): NamedLimit {
  const o = objectAt(value, where);
  for (const key of Object.keys(o))
    if (key !== 'concurrency' && key !== 'rate')
      throw new ConfigError(`${where}: unknown key "${key}" (a limit has concurrency and/or rate)`);
  const limit: NamedLimit = {};
  if (o.concurrency !== undefined) {
    const n = o.concurrency;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_COUNT)
      throw new ConfigError(
        `${where}: concurrency must be an integer from 1 to ${MAX_COUNT}, got ${JSON.stringify(n)}`,
      );
    limit.concurrency = n;
  }
  if (o.rate !== undefined) limit.rate = rateAt(o.rate, where);
  if (!limit.concurrency && !limit.rate) throw new ConfigError(`${where}: a limit needs concurrency or rate`);
  return limit;
}

function rateAt(value: unknown, where: string): { count: number; windowMs: number } {
  const m = typeof value === 'string' ? /^([1-9][0-9]*)\/([smh])$/.exec(value) : null;
  const count = Number(m?.[1]);
  if (!m || count > MAX_COUNT)
    throw new ConfigError(
      `${where}: rate must be "<n>/s", "<n>/m" or "<n>/h" (n from 1 to ${MAX_COUNT}), got ${JSON.stringify(value)}`,
    );
  return { count, windowMs: WINDOWS[m[2] as string] as number };
}

/** `*` matches any run of characters (MCP tool names hold `__`); everything else is literal. */
function globMatcher(pattern: string): (name: string) => boolean {
  if (!pattern.includes('*')) return (name) => name === pattern;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  const re = new RegExp(`^${source}$`);
  return (name) => re.test(name);
}

/** A stage of a named limit, as the limits seam takes it (`LimitStage`): each limit its own scope. */
export interface NamedStage {
  scope: { limit: string };
  name: string;
  concurrency: number;
  reason: 'named_limit';
  rate?: { count: number; windowMs: number };
}

/** What a call is, for its named limits. */
export interface LimitedCall {
  tool: string;
  /** The MCP server of an MCP tool. */
  server?: string | undefined;
  tenant: string;
}

/**
 * The named stages of one call, in a fixed order (tools as listed, server, tenant) so that two
 * calls never wait for each other's stages in opposite orders. Each named limit is its own scope
 * (its own Redis hash slot); a tenant's limit is per tenant.
 */
export function namedStages(limits: NamedLimits | undefined, call: LimitedCall): NamedStage[] {
  if (!limits) return [];
  const stages: NamedStage[] = [];
  const add = (name: string, limit: NamedLimit) => {
    stages.push({
      scope: { limit: name },
      name,
      concurrency: limit.concurrency ?? MAX_COUNT,
      reason: 'named_limit',
      ...(limit.rate ? { rate: limit.rate } : {}),
    });
  };
  for (const t of limits.tools) if (t.matches(call.tool)) add(`tool:${t.pattern}`, t.limit);
  const server = call.server === undefined ? undefined : limits.servers.get(call.server);
  if (server) add(`server:${call.server}`, server);
  const own = limits.tenants.get(call.tenant);
  const any = limits.tenants.get('*');
  if (own) add(`tenant:${call.tenant}`, own);
  else if (any) add(`tenant:${call.tenant}`, any);
  return stages;
}

/** A short account of a limit for a message: `concurrency 2, 10/s`. */
export function describeLimit(stage: Pick<NamedStage, 'concurrency' | 'rate'>): string {
  const parts: string[] = [];
  if (stage.concurrency < MAX_COUNT) parts.push(`concurrency ${stage.concurrency}`);
  if (stage.rate) parts.push(`${stage.rate.count} per ${stage.rate.windowMs / 1000} s`);
  return parts.join(', ');
}

/** What a named limit holds now, as the limits seam reads it (`Limits.peek`). */
export interface LimitNow {
  /** Places held (under a lease not lapsed). */
  held: number;
  /** Ms until the oldest grant of its full rate window leaves it (its next token); 0 when the window has room, or without a rate. */
  nextTokenMs: number;
  /** The mean ms its places were held by the last calls that held one to the end (this process's), when any did. */
  meanHoldMs?: number | undefined;
}

/**
 * When a call that ended rate_limited may expect its limits to let it start (`retryAfterMs`,
 * API.md): per stage, by its rate the time until its next token; by its concurrency, when every
 * place is held, the mean hold time divided by the places (how often one frees up while all are
 * busy), or before any call held one to the end (or for a stage not read) `waitedMs`: none freed
 * up in that long. The largest over the stages, calls still waiting not counted; at least 1 ms.
 */
export function retryAfterOf(
  stages: readonly Pick<NamedStage, 'concurrency' | 'rate'>[],
  now: readonly LimitNow[],
  waitedMs: number,
): number {
  let ms = 0;
  for (const [i, stage] of stages.entries()) {
    const state = now[i];
    if (!state) {
      ms = Math.max(ms, waitedMs); // not read (the store unreachable): none freed up in that long
      continue;
    }
    if (stage.rate) ms = Math.max(ms, state.nextTokenMs);
    if (state.held >= stage.concurrency) {
      const perPlace = state.meanHoldMs === undefined ? waitedMs : state.meanHoldMs / stage.concurrency;
      ms = Math.max(ms, perPlace);
    }
  }
  return Math.max(1, Math.round(ms));
}
