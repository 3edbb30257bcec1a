import { DEFAULT_ROUND_RETENTION_MS, DEFAULT_SESSION_TTL_MS } from '@tool-dispatch/shared';
import rfdc from 'rfdc';
import type {
  CachedResult,
  DedupeEntry,
  DedupeInvalidation,
  Grant,
  GrantMatch,
  HistoryEntry,
  SessionState,
  StoredPlanned,
} from '../model.js';
import { resultOf } from '../model.js';
import { grantLive, MAX_GRANTS_PER_SESSION, pickGrant } from '../rules/grants.js';
import { getOrCreate } from '../support/maps.js';
import type {
  BeginRound,
  BeginRoundInput,
  CommitRoundInput,
  CommittedRound,
  RoundRecord,
  Store,
  TakenRound,
} from './store.js';

/** A round as kept here: its record, plus what a takeover needs. */
interface KeptRound extends RoundRecord {
  owner?: string;
  origin?: string;
  calls?: unknown[];
  planned?: StoredPlanned[];
  /** The Idempotency-Key it holds, forgotten with it once its retention has passed. */
  idempotencyKey?: string;
  /** (v1.3) Epoch ms past which a finished round is forgotten (TD_ROUND_RETENTION_MS after it ended). */
  expiresAt?: number;
}

/**
 * Copies in and out, so no caller shares the store's objects. What is stored is JSON-shaped (the
 * Redis store keeps the same values as JSON), so rfdc's plain deep copy serves, at about a fifth of
 * structuredClone's fixed cost per value (the bench's profile had structuredClone at 12%).
 */
const clone: <T>(v: T) => T = rfdc({ proto: false, circles: false });

/** Everything scoped to one session, dropped together once the session has been idle past the TTL. */
interface SessionBucket {
  state?: SessionState;
  /** Run → dedupe key → entry. */
  dedupe: Map<string, Map<string, DedupeEntry>>;
  history: HistoryEntry[];
  /** `<run>\u0000<round>` → round. */
  rounds: Map<string, KeptRound>;
  /** `<run>\u0000<idempotency key>` → round id. */
  idempotency: Map<string, string>;
  /** (v1.2) grantId → grant. */
  grants?: Map<string, Grant>;
  usedAt: number;
}

export interface MemoryStoreOptions {
  now?: () => number;
  /**
   * TD_SESSION_TTL_MS: a session not used (read or written) for this long is dropped with its
   * histories, dedupe maps, rounds and idempotency keys, as Redis expires them (default 7 days).
   */
  sessionTtlMs?: number;
  /** TD_ROUND_RETENTION_MS (v1.3): a finished round and its idempotency key are kept this long after it ends (default a day). */
  roundRetentionMs?: number;
}

/** The embedded-mode Store: plain maps in this process, with the same rules as RedisStore. */
export class MemoryStore implements Store {
  /** The engine publishes the round's events on its EventBus. */
  readonly appendsEvents = false;
  readonly inProcess = true;
  private readonly buckets = new Map<string, SessionBucket>();
  private readonly cache = new Map<string, { value: CachedResult; expiresAt: number }>();
  private readonly now: () => number;
  private readonly ttlMs: number;
  private readonly retentionMs: number;
  private sweptAt: number;

  constructor(options: MemoryStoreOptions | (() => number) = {}) {
    const resolved = typeof options === 'function' ? { now: options } : options;
    this.now = resolved.now ?? Date.now;
    this.ttlMs = resolved.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
    if (!Number.isInteger(this.ttlMs) || this.ttlMs < 1)
      throw new Error(`sessionTtlMs must be a positive integer, got ${this.ttlMs}`);
    this.retentionMs = resolved.roundRetentionMs ?? DEFAULT_ROUND_RETENTION_MS;
    if (!Number.isInteger(this.retentionMs) || this.retentionMs < 1)
      throw new Error(`roundRetentionMs must be a positive integer, got ${this.retentionMs}`);
    this.sweptAt = this.now();
  }

  /** The session's bucket when it is live (touching it), else undefined; `create` makes one. */
  private bucket(session: string, create: true): SessionBucket;
  private bucket(session: string, create?: false): SessionBucket | undefined;
  private bucket(session: string, create = false): SessionBucket | undefined {
    const now = this.now();
    this.sweep(now);
    let b = this.buckets.get(session);
    if (b && now - b.usedAt >= this.ttlMs) {
      this.buckets.delete(session);
      b = undefined;
    }
    if (!b && create) {
      b = { dedupe: new Map(), history: [], rounds: new Map(), idempotency: new Map(), usedAt: now };
      this.buckets.set(session, b);
    }
    if (b) b.usedAt = now;
    return b;
  }

  /** Drops idle sessions and expired cache entries, at most once per tenth of the TTL (amortised O(1)). */
  private sweep(now: number): void {
    if (now - this.sweptAt < Math.min(this.ttlMs / 10, 60_000)) return;
    this.sweptAt = now;
    for (const [id, b] of this.buckets) if (now - b.usedAt >= this.ttlMs) this.buckets.delete(id);
    for (const [k, e] of this.cache) if (e.expiresAt <= now) this.cache.delete(k);
  }

  /** How many sessions are held (live or not yet swept), for tests of the idle TTL. */
  get size(): number {
    return this.buckets.size;
  }

  async getSession(session: string): Promise<SessionState | null> {
    const s = this.bucket(session)?.state;
    return s ? clone(s) : null;
  }

  async putSession(state: SessionState): Promise<void> {
    this.bucket(state.id, true).state = clone(state);
  }

  async markFetched(session: string, names: readonly string[]): Promise<void> {
    const s = this.bucket(session)?.state;
    if (!s) return;
    for (const n of names) if (!s.fetched.includes(n)) s.fetched.push(n);
  }

  async addGrant(session: string, grant: Grant): Promise<boolean> {
    const bucket = this.bucket(session, true);
    bucket.grants ??= new Map();
    const grants = bucket.grants;
    const now = this.now();
    for (const [id, g] of grants) if (!grantLive(g, now)) grants.delete(id);
    if (grants.size >= MAX_GRANTS_PER_SESSION) return false;
    grants.set(grant.grantId, { ...grant });
    return true;
  }

  async listGrants(session: string): Promise<Grant[]> {
    const now = this.now();
    const live = [...(this.bucket(session)?.grants?.values() ?? [])].filter((g) => grantLive(g, now));
    return live.map((g) => ({ ...g })).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async useGrant(session: string, match: GrantMatch): Promise<Grant | null> {
    const grant = pickGrant([...(this.bucket(session)?.grants?.values() ?? [])], match);
    if (!grant) return null;
    grant.uses += 1;
    return { ...grant };
  }

  async revokeGrant(session: string, grantId: string): Promise<boolean> {
    return this.bucket(session)?.grants?.delete(grantId) ?? false;
  }

  async addAutoApprove(session: string, tool: string): Promise<void> {
    const s = this.bucket(session)?.state;
    if (!s || s.autoApprove === 'all') return;
    if (!s.autoApprove.includes(tool)) s.autoApprove.push(tool);
  }

  private runDedupe(session: string, run: string): Map<string, DedupeEntry> {
    return getOrCreate(this.bucket(session, true).dedupe, run, () => new Map<string, DedupeEntry>());
  }

  async findDedupe(session: string, run: string, key: string): Promise<DedupeEntry | null> {
    const e = this.bucket(session)?.dedupe.get(run)?.get(key);
    return e ? clone(e) : null;
  }

  async findDedupeMany(session: string, run: string, keys: readonly string[]): Promise<Map<string, DedupeEntry>> {
    const found = new Map<string, DedupeEntry>();
    const entries = this.bucket(session)?.dedupe.get(run);
    for (const key of keys) {
      const e = entries?.get(key);
      if (e) found.set(key, clone(e));
    }
    return found;
  }

  async putDedupe(session: string, run: string, entry: DedupeEntry): Promise<void> {
    this.putDedupeNow(session, run, entry);
  }

  private putDedupeNow(session: string, run: string, entry: DedupeEntry): void {
    this.runDedupe(session, run).set(entry.key, clone(entry));
  }

  async dropDedupe(session: string, run: string, invalidation: DedupeInvalidation): Promise<number> {
    return this.dropDedupeNow(session, run, invalidation);
  }

  private dropDedupeNow(session: string, run: string, invalidation: DedupeInvalidation): number {
    const m = this.runDedupe(session, run);
    let dropped = 0;
    for (const [key, e] of m) {
      if (e.tool !== invalidation.tool) continue;
      const covered = !invalidation.paths || (e.paths ?? []).some((p) => invalidation.paths?.includes(p));
      if (covered) {
        m.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  async findCached(tenant: string, key: string): Promise<CachedResult | null> {
    return this.cachedNow(tenant, key);
  }

  private cachedNow(tenant: string, key: string): CachedResult | null {
    const k = `${tenant}\u0000${key}`;
    const e = this.cache.get(k);
    if (!e) return null;
    if (e.expiresAt <= this.now()) {
      this.cache.delete(k);
      return null;
    }
    return clone(e.value);
  }

  async findCachedMany(tenant: string, keys: readonly string[]): Promise<Map<string, CachedResult>> {
    const found = new Map<string, CachedResult>();
    for (const key of keys) {
      const e = this.cachedNow(tenant, key);
      if (e) found.set(key, e);
    }
    return found;
  }

  async putCached(tenant: string, key: string, value: CachedResult, ttlMs: number): Promise<void> {
    this.putCachedNow(tenant, key, value, this.now() + ttlMs);
  }

  private putCachedNow(tenant: string, key: string, value: CachedResult, expiresAt: number): void {
    this.cache.set(`${tenant}\u0000${key}`, { value: clone(value), expiresAt });
  }

  async history(session: string, tool?: string, last?: number): Promise<HistoryEntry[]> {
    const h = this.bucket(session)?.history ?? [];
    const listed = tool === undefined ? h : h.filter((e) => e.name === tool);
    return clone(last === undefined ? listed : listed.slice(-last));
  }

  private keptRound(session: string, run: string, round: string): KeptRound | undefined {
    const bucket = this.bucket(session);
    return bucket && this.liveRound(bucket, run, round);
  }

  /** A round of the bucket, unless its retention has passed (then it goes, with its idempotency key). */
  private liveRound(bucket: SessionBucket, run: string, round: string): KeptRound | undefined {
    const key = `${run}\u0000${round}`;
    const r = bucket.rounds.get(key);
    if (r?.expiresAt === undefined || r.expiresAt > this.now()) return r;
    bucket.rounds.delete(key);
    if (r.idempotencyKey !== undefined) bucket.idempotency.delete(`${run}\u0000${r.idempotencyKey}`);
    return undefined;
  }

  /** A round that ended: kept for the retention from now on. */
  private retain(r: KeptRound): void {
    r.expiresAt = this.now() + this.retentionMs;
  }

  async beginRound(input: BeginRoundInput): Promise<BeginRound> {
    const { session, run, round, idempotencyKey, callsHash } = input;
    const bucket = this.bucket(session);
    const state = bucket?.state;
    if (!bucket || !state) return { kind: 'no_session' };
    if (idempotencyKey !== undefined) {
      const existingId = bucket.idempotency.get(`${run}\u0000${idempotencyKey}`);
      const existing = existingId ? this.liveRound(bucket, run, existingId) : undefined;
      if (existing)
        return { kind: existing.callsHash === callsHash ? 'existing' : 'conflict', record: recordOf(existing) };
      bucket.idempotency.set(`${run}\u0000${idempotencyKey}`, round);
    }
    const record: RoundRecord = { round, session, run, callsHash, state: 'running', createdAt: this.now() };
    if (input.callNames) record.callNames = clone(input.callNames);
    const kept: KeptRound = input.owner
      ? { ...record, owner: input.owner, calls: clone(input.calls ?? []) }
      : { ...record };
    if (idempotencyKey !== undefined) kept.idempotencyKey = idempotencyKey;
    bucket.rounds.set(`${run}\u0000${round}`, kept);
    const entries = this.runDedupe(session, run);
    const dedupe = new Map<string, DedupeEntry>();
    for (const key of input.dedupeKeys ?? []) {
      const e = entries.get(key);
      if (e) dedupe.set(key, clone(e));
    }
    return { kind: 'new', record: { ...record }, session: clone(state), dedupe };
  }

  async takeRound(session: string, run: string, round: string, owner: string): Promise<TakenRound> {
    const r = this.keptRound(session, run, round);
    if (r?.state === 'done' || r?.state === 'failed') return { kind: 'done' };
    if (!r?.calls) return { kind: 'missing' };
    const taken: TakenRound = { kind: 'taken', calls: clone(r.calls), origin: r.origin ?? r.owner ?? '' };
    if (r.planned) taken.planned = clone(r.planned);
    r.origin = taken.origin;
    r.owner = owner;
    return taken;
  }

  async saveDecisions(
    session: string,
    run: string,
    round: string,
    owner: string,
    planned: StoredPlanned[],
  ): Promise<boolean> {
    const r = this.keptRound(session, run, round);
    if (r?.state !== 'running' || r.owner !== owner) return false;
    r.planned = clone(planned);
    return true;
  }

  async failRound(session: string, run: string, round: string, owner: string, error: string): Promise<boolean> {
    const r = this.keptRound(session, run, round);
    if (r?.state !== 'running' || r.owner !== owner) return false;
    r.state = 'failed';
    r.error = error;
    delete r.calls;
    delete r.planned;
    this.retain(r);
    return true;
  }

  async commitRound(input: CommitRoundInput): Promise<CommittedRound> {
    const { session, tenant, run } = input;
    const r = this.keptRound(session, run, input.round);
    // DESIGN.md pass 3: commit is idempotent (a round done is committed), and fenced by the owner.
    if (r?.state === 'done' || r?.state === 'failed' || (input.owner && r?.owner && r.owner !== input.owner))
      return { fenced: true };
    const history = this.bucket(session, true).history;
    const kept: HistoryEntry[] = [];
    const now = this.now();
    for (const item of input.items) {
      const entry = clone(item.entry);
      kept.push(entry);
      history.push(entry);
      if (item.dedupe) this.putDedupeNow(session, run, item.dedupe);
      if (item.cache) this.putCachedNow(tenant, item.cache.key, item.cache.value, now + item.cache.ttlMs);
      for (const inv of item.invalidations ?? []) this.dropDedupeNow(session, run, inv);
    }
    if (r) {
      r.state = 'done';
      // The answer's results share the history's copies: the store hands out only copies of either.
      r.response = { round: input.round, results: kept.map(resultOf) };
      delete r.calls;
      delete r.planned;
      this.retain(r);
    }
    return { fenced: false };
  }

  async getRound(session: string, run: string, round: string): Promise<RoundRecord | null> {
    const r = this.keptRound(session, run, round);
    return r ? recordOf(r) : null;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}

/** A kept round as its record (a copy), as RedisStore reads it: who runs it and who began it, while it runs. */
function recordOf(r: KeptRound): RoundRecord {
  const { owner, origin, calls: _calls, planned: _planned, idempotencyKey: _key, expiresAt: _at, ...record } = r;
  const out: RoundRecord = clone(record);
  if (r.state === 'running' && owner) out.owner = owner;
  if (r.state === 'running' && origin) out.origin = origin;
  return out;
}
