import type { CallResult, ToolDefinition } from '@tool-dispatch/shared';

/** What a session is made of (DESIGN.md vocabulary). Serialisable. */
export interface SessionState {
  id: string;
  provider: string;
  tenant: string;
  /** Tool names approved for the whole session, or every tool. */
  autoApprove: string[] | 'all';
  clientTools: ToolDefinition[];
  /** Tools the model may call directly. */
  loaded: string[];
  /** Tools whose schema this session has been shown. */
  fetched: string[];
  workspace: string;
  createdAt: number;
  updatedAt: number;
}

/** One recorded result: the call's result plus where and when it was committed. */
export interface HistoryEntry extends CallResult {
  round: string;
  run: string;
  /** Commit time, ISO 8601. */
  at: string;
}

/** A successful result remembered for the run's dedupe map. */
export interface DedupeEntry {
  key: string;
  tool: string;
  callId: string;
  round: string;
  output: unknown;
  /** Normalised workspace paths the call read (read_files), for invalidation by edit_file. */
  paths?: string[];
}

/** Which dedupe entries of a run a side effect invalidates. */
export interface DedupeInvalidation {
  tool: string;
  /** Only entries whose paths meet these; absent means every entry of the tool. */
  paths?: string[];
}

/** One call of a round as pass 3 commits it (DESIGN.md), for `Store.commitResults`. */
export interface CommitItem {
  /** The call's index in its round: (round, callIndex) is committed once. */
  callIndex: number;
  entry: HistoryEntry;
  /** Put into the run's dedupe map (an `ok` result of a dedupable call). */
  dedupe?: DedupeEntry;
  /** Written to the tenant's result cache (an `ok` result of a cacheable call). */
  cache?: { key: string; value: CachedResult; ttlMs: number };
  /** The run's dedupe entries this call's side effect removes, after its own writes. */
  invalidations?: readonly DedupeInvalidation[];
}

export interface CachedResult {
  output: unknown;
  callId: string;
  round: string;
  storedAt: number;
}

/** The stored state of a round, so a retry (or another coordinator) can answer it. */
export interface RoundRecord {
  round: string;
  session: string;
  run: string;
  /** Hash of the canonical calls, to tell a retry from a different round under the same key. */
  callsHash: string;
  state: 'running' | 'done';
  /** The full answer once done. */
  response?: RoundResponse;
  createdAt: number;
}

export interface RoundResponse {
  round: string;
  results: CallResult[];
}

export type BeginRound =
  | { kind: 'new'; record: RoundRecord; session: SessionState }
  | { kind: 'existing'; record: RoundRecord }
  | { kind: 'conflict'; record: RoundRecord }
  | { kind: 'no_session' };

/**
 * State the three passes read and write, as domain operations (not Redis commands).
 * MemoryStore and RedisStore both pass `store.contract.ts`.
 */
export interface Store {
  getSession(session: string): Promise<SessionState | null>;
  putSession(state: SessionState): Promise<void>;
  /** Adds names to the session's fetched set (no-op for names already there). */
  markFetched(session: string, names: readonly string[]): Promise<void>;
  /** Adds a tool to the session's auto-approve list. */
  addAutoApprove(session: string, tool: string): Promise<void>;

  findDedupe(session: string, run: string, key: string): Promise<DedupeEntry | null>;
  /** `findDedupe` for many keys at once: the entries found, by key. */
  findDedupeMany(session: string, run: string, keys: readonly string[]): Promise<Map<string, DedupeEntry>>;
  putDedupe(session: string, run: string, entry: DedupeEntry): Promise<void>;
  /** Removes the run's entries the invalidation covers; returns how many went. */
  dropDedupe(session: string, run: string, invalidation: DedupeInvalidation): Promise<number>;

  /** Result cache, scoped to a tenant; entries expire after `ttlMs`. */
  findCached(tenant: string, key: string): Promise<CachedResult | null>;
  /** `findCached` for many keys at once: the live entries found, by key. */
  findCachedMany(tenant: string, keys: readonly string[]): Promise<Map<string, CachedResult>>;
  putCached(tenant: string, key: string, value: CachedResult, ttlMs: number): Promise<void>;

  /**
   * DESIGN.md pass 3: commit is idempotent. Records the entry in the session's results and its
   * tool's history unless (round, callIndex) was committed before; true when it recorded it.
   */
  recordResult(session: string, callIndex: number, entry: HistoryEntry): Promise<boolean>;
  history(session: string, tool?: string): Promise<HistoryEntry[]>;
  /**
   * Pass 3 for a whole round, in item order: for each item not committed before, what
   * `recordResult`, `putDedupe`, `putCached` and `dropDedupe` would do one by one (a later item
   * sees an earlier one's dedupe writes). Returns, per item, whether it was recorded now.
   */
  commitResults(input: {
    session: string;
    tenant: string;
    run: string;
    items: readonly CommitItem[];
  }): Promise<boolean[]>;

  /**
   * Starts a round of an existing session under an idempotency key (or a fresh one when key is
   * undefined): `new` (with the session as it is now) when the key is unused, `existing` when it
   * names a round with the same calls, `conflict` otherwise; `no_session`, writing nothing, when
   * the session does not exist.
   */
  beginRound(input: {
    session: string;
    run: string;
    round: string;
    idempotencyKey: string | undefined;
    callsHash: string;
  }): Promise<BeginRound>;
  finishRound(session: string, run: string, round: string, response: RoundResponse): Promise<void>;
  getRound(session: string, run: string, round: string): Promise<RoundRecord | null>;

  /** Store reachable (for /readyz). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
