import type {
  CachedResult,
  DedupeEntry,
  DedupeInvalidation,
  HistoryEntry,
  SessionState,
  StoredPlanned,
} from '../model.js';
import { resultOf } from '../model.js';
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
}

const clone = <T>(v: T): T => structuredClone(v);

/** The embedded-mode Store: plain maps in this process, with the same rules as RedisStore. */
export class MemoryStore implements Store {
  /** The engine publishes the round's events on its EventBus. */
  readonly appendsEvents = false;
  private readonly sessions = new Map<string, SessionState>();
  private readonly dedupe = new Map<string, Map<string, DedupeEntry>>();
  private readonly cache = new Map<string, { value: CachedResult; expiresAt: number }>();
  private readonly histories = new Map<string, HistoryEntry[]>();
  private readonly rounds = new Map<string, KeptRound>();
  private readonly idempotency = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  async getSession(session: string): Promise<SessionState | null> {
    const s = this.sessions.get(session);
    return s ? clone(s) : null;
  }

  async putSession(state: SessionState): Promise<void> {
    this.sessions.set(state.id, clone(state));
  }

  async markFetched(session: string, names: readonly string[]): Promise<void> {
    const s = this.sessions.get(session);
    if (!s) return;
    for (const n of names) if (!s.fetched.includes(n)) s.fetched.push(n);
  }

  async addAutoApprove(session: string, tool: string): Promise<void> {
    const s = this.sessions.get(session);
    if (!s || s.autoApprove === 'all') return;
    if (!s.autoApprove.includes(tool)) s.autoApprove.push(tool);
  }

  private runDedupe(session: string, run: string): Map<string, DedupeEntry> {
    const k = `${session}\u0000${run}`;
    const m = getOrCreate(this.dedupe, k, () => new Map<string, DedupeEntry>());
    return m;
  }

  async findDedupe(session: string, run: string, key: string): Promise<DedupeEntry | null> {
    const e = this.runDedupe(session, run).get(key);
    return e ? clone(e) : null;
  }

  async findDedupeMany(session: string, run: string, keys: readonly string[]): Promise<Map<string, DedupeEntry>> {
    const found = new Map<string, DedupeEntry>();
    for (const key of keys) {
      const e = await this.findDedupe(session, run, key);
      if (e) found.set(key, e);
    }
    return found;
  }

  async putDedupe(session: string, run: string, entry: DedupeEntry): Promise<void> {
    this.runDedupe(session, run).set(entry.key, clone(entry));
  }

  async dropDedupe(session: string, run: string, invalidation: DedupeInvalidation): Promise<number> {
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
      const e = await this.findCached(tenant, key);
      if (e) found.set(key, e);
    }
    return found;
  }

  async putCached(tenant: string, key: string, value: CachedResult, ttlMs: number): Promise<void> {
    this.cache.set(`${tenant}\u0000${key}`, { value: clone(value), expiresAt: this.now() + ttlMs });
  }

  async history(session: string, tool?: string, last?: number): Promise<HistoryEntry[]> {
    const h = this.histories.get(session) ?? [];
    const listed = tool === undefined ? h : h.filter((e) => e.name === tool);
    return clone(last === undefined ? listed : listed.slice(-last));
  }

  async beginRound(input: BeginRoundInput): Promise<BeginRound> {
    const { session, run, round, idempotencyKey, callsHash } = input;
    const state = this.sessions.get(session);
    if (!state) return { kind: 'no_session' };
    if (idempotencyKey !== undefined) {
      const existingId = this.idempotency.get(`${session}\u0000${run}\u0000${idempotencyKey}`);
      const existing = existingId ? this.rounds.get(`${session}\u0000${run}\u0000${existingId}`) : undefined;
      if (existing)
        return { kind: existing.callsHash === callsHash ? 'existing' : 'conflict', record: clone(existing) };
      this.idempotency.set(`${session}\u0000${run}\u0000${idempotencyKey}`, round);
    }
    const record: RoundRecord = { round, session, run, callsHash, state: 'running', createdAt: this.now() };
    const kept: KeptRound = input.owner ? { ...record, owner: input.owner, calls: clone(input.calls ?? []) } : record;
    this.rounds.set(`${session}\u0000${run}\u0000${round}`, kept);
    const entries = this.runDedupe(session, run);
    const dedupe = new Map<string, DedupeEntry>();
    for (const key of input.dedupeKeys ?? []) {
      const e = entries.get(key);
      if (e) dedupe.set(key, clone(e));
    }
    return { kind: 'new', record: clone(record), session: clone(state), dedupe };
  }

  async takeRound(session: string, run: string, round: string, owner: string): Promise<TakenRound> {
    const r = this.rounds.get(`${session}\u0000${run}\u0000${round}`);
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
    const r = this.rounds.get(`${session}\u0000${run}\u0000${round}`);
    if (r?.state !== 'running' || r.owner !== owner) return false;
    r.planned = clone(planned);
    return true;
  }

  async failRound(session: string, run: string, round: string, owner: string, error: string): Promise<boolean> {
    const r = this.rounds.get(`${session}\u0000${run}\u0000${round}`);
    if (r?.state !== 'running' || r.owner !== owner) return false;
    r.state = 'failed';
    r.error = error;
    delete r.calls;
    delete r.planned;
    return true;
  }

  async commitRound(input: CommitRoundInput): Promise<CommittedRound> {
    const { session, tenant, run } = input;
    const r = this.rounds.get(`${session}\u0000${run}\u0000${input.round}`);
    // DESIGN.md pass 3: commit is idempotent (a round done is committed), and fenced by the owner.
    if (r?.state === 'done' || r?.state === 'failed' || (input.owner && r?.owner && r.owner !== input.owner))
      return { fenced: true };
    const history = getOrCreate(this.histories, session, () => []);
    for (const item of input.items) {
      history.push(clone(item.entry));
      if (item.dedupe) await this.putDedupe(session, run, item.dedupe);
      if (item.cache) await this.putCached(tenant, item.cache.key, item.cache.value, item.cache.ttlMs);
      for (const inv of item.invalidations ?? []) await this.dropDedupe(session, run, inv);
    }
    if (r) {
      r.state = 'done';
      r.response = { round: input.round, results: input.items.map((item) => clone(resultOf(item.entry))) };
      delete r.calls;
      delete r.planned;
    }
    return { fenced: false };
  }

  async getRound(session: string, run: string, round: string): Promise<RoundRecord | null> {
    const r = this.rounds.get(`${session}\u0000${run}\u0000${round}`);
    if (!r) return null;
    const { owner: _owner, origin: _origin, calls: _calls, planned: _planned, ...record } = r;
    return clone(record);
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}
