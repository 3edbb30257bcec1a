import type {
  CachedResult,
  DedupeEntry,
  DedupeInvalidation,
  Grant,
  GrantMatch,
  HistoryEntry,
  RoundRef,
  RoundResponse,
  SessionState,
  StoredPlanned,
} from '../model.js';

/** One call of a round as pass 3 commits it (DESIGN.md), for `Store.commitRound`. */
export interface CommitItem {
  /** The call's index in its round. */
  callIndex: number;
  entry: HistoryEntry;
  /** Put into the run's dedupe map (an `ok` result of a dedupable call). */
  dedupe?: DedupeEntry;
  /** Written to the tenant's result cache (an `ok` result of a cacheable call). */
  cache?: { key: string; value: CachedResult; ttlMs: number };
  /** The run's dedupe entries this call's side effect removes, after its own writes. */
  invalidations?: readonly DedupeInvalidation[];
}

/** The stored state of a round, so a retry (or another coordinator) can answer it. */
export interface RoundRecord {
  round: string;
  session: string;
  run: string;
  /** Hash of the canonical calls, to tell a retry from a different round under the same key. */
  callsHash: string;
  /** `failed`: given up by its coordinator after its retries (`Store.failRound`); it has no answer. */
  state: 'running' | 'done' | 'failed';
  /** The full answer once done. */
  response?: RoundResponse;
  /** Why it failed, for a retry under its key (state `failed`). */
  error?: string;
  createdAt: number;
  /** The coordinator running it (distributed mode, while it runs): a retry checks it still lists it. */
  owner?: string;
  /**
   * The coordinator that began it, when another took it over (while it runs): its calls' outcomes
   * are kept under that one's name. Absent: `owner`.
   */
  origin?: string;
  /** (v1.3) Each call's id and tool name (run_tool unwrapped), in call order: the running round's view lists them. */
  callNames?: RoundCallName[];
}

/** (v1.3) A call of a round as its record lists it. */
export interface RoundCallName {
  id: string;
  name: string;
  /** The item's `type` when it is not a function call (`otherItemOf`): what the format views need to answer it as the POST did. */
  item?: string;
}

/** What a takeover finds of a round (`Store.takeRound`). */
export type TakenRound =
  /** Now the caller's: its calls, and pass 1's decisions when a person answered its confirmations. */
  | {
      kind: 'taken';
      calls: unknown[];
      planned?: StoredPlanned[];
      /** The coordinator that began the round: its calls' outcomes are kept under its name. */
      origin: string;
    }
  | { kind: 'done' }
  /** No such round, or one begun without an owner (nothing to resume from). */
  | { kind: 'missing' };

/** What `Store.commitRound` did: `fenced` when the round was done or another coordinator's, and nothing was written. */
export interface CommittedRound {
  fenced: boolean;
}

export type BeginRound =
  /** `dedupe`: the run's entries found under the `dedupeKeys` asked for. */
  | { kind: 'new'; record: RoundRecord; session: SessionState; dedupe: Map<string, DedupeEntry> }
  | { kind: 'existing'; record: RoundRecord }
  | { kind: 'conflict'; record: RoundRecord }
  | { kind: 'no_session' };

/** What `Store.beginRound` takes. */
export interface BeginRoundInput {
  session: string;
  run: string;
  round: string;
  idempotencyKey: string | undefined;
  callsHash: string;
  /** The coordinator running the round; with it, the round keeps `calls` for a takeover. */
  owner?: string;
  calls?: unknown[];
  /** The `round.started` data, appended for a new round when `appendsEvents`. */
  started?: Record<string, unknown>;
  /** Dedupe keys of the run to read with the begin (`findDedupeMany` in the same step). */
  dedupeKeys?: readonly string[];
  /** (v1.3) Kept in the round's record (`RoundRecord.callNames`), for the running round's view. */
  callNames?: RoundCallName[];
}

/** What `Store.commitRound` takes. */
export interface CommitRoundInput {
  session: string;
  tenant: string;
  run: string;
  round: string;
  /** The committing coordinator: fenced (nothing written) when another owns the round. */
  owner?: string;
  /** The round's calls in call order; their results, in that order, are the round's answer. */
  items: readonly CommitItem[];
  /** The `round.completed` data; with it and `appendsEvents`, the round's events are appended. */
  completed?: Record<string, unknown>;
}

/**
 * State the three passes read and write, as domain operations (not Redis commands).
 * MemoryStore and RedisStore both pass `store.contract.ts`.
 */
export interface Store {
  /**
   * True when `beginRound` and `commitRound` append the round's events (`round.started`;
   * `tool.result` per call recorded now, then `round.completed`) to the session's event stream
   * themselves, in the same step; otherwise the caller publishes them.
   */
  readonly appendsEvents: boolean;
  /** True when the store is this process's memory: its answers cannot be lost on the way, so no patience timer. */
  readonly inProcess?: boolean;
  getSession(session: string): Promise<SessionState | null>;
  putSession(state: SessionState): Promise<void>;
  /** Adds names to the session's fetched set (no-op for names already there). */
  markFetched(session: string, names: readonly string[]): Promise<void>;
  /** Adds a tool to the session's auto-approve list. */
  addAutoApprove(session: string, tool: string): Promise<void>;

  /** (v1.2) Keeps a grant with the session (the same slot); false when it has MAX_GRANTS_PER_SESSION live ones. */
  addGrant(session: string, grant: Grant): Promise<boolean>;
  /** The session's live grants, oldest first. */
  listGrants(session: string): Promise<Grant[]>;
  /** The grant that approves a call (`pickGrant`), its use counted at once; null when none covers it. */
  useGrant(session: string, match: GrantMatch): Promise<Grant | null>;
  /** Revokes a grant; false when the session has none under that id. */
  revokeGrant(session: string, grantId: string): Promise<boolean>;

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

  /** The session's recorded results (or one tool's), oldest first; with `last`, only the newest `last` of them. */
  history(session: string, tool?: string, last?: number): Promise<HistoryEntry[]>;

  /**
   * Starts a round of an existing session under an idempotency key (or a fresh one when key is
   * undefined): `new` (with the session as it is now) when the key is unused, `existing` when it
   * names a round with the same calls, `conflict` otherwise; `no_session`, writing nothing, when
   * the session does not exist. With `owner`, the round is recorded as that coordinator's, with
   * its `calls`, so another coordinator can take it over (`takeRound`). (v1.3) A finished round
   * is kept `roundRetentionMs` after it ends (committed or failed), then forgotten with its
   * idempotency key: `getRound` says null, and the key begins a new round.
   */
  beginRound(input: BeginRoundInput): Promise<BeginRound>;
  /**
   * Makes `owner` the owner of a running round (its previous owner is fenced out: its
   * `commitRound` and `saveDecisions` write nothing) and returns what is needed to finish it.
   */
  takeRound(session: string, run: string, round: string, owner: string): Promise<TakenRound>;
  /**
   * Keeps pass 1's decisions of a round whose confirmations a person answered, so a takeover
   * does not ask again; false (nothing stored) when `owner` no longer owns the running round.
   */
  saveDecisions(session: string, run: string, round: string, owner: string, planned: StoredPlanned[]): Promise<boolean>;
  /**
   * Ends a round that cannot be finished (its coordinator gave up on it after its retries): state
   * `failed` with `error`, so a retry under its Idempotency-Key is answered instead of waiting for
   * ever; it is then never taken over nor committed. Fenced like `saveDecisions`: true only when
   * the round was running under `owner`.
   */
  failRound(session: string, run: string, round: string, owner: string, error: string): Promise<boolean>;
  /**
   * DESIGN.md pass 3 for a whole round, and its answer, in one atomic step: in item order, each
   * entry appended to the session's history and its tool's, its dedupe entry put, its cache
   * entry written, what it invalidates dropped (a later item sees an earlier one's writes); then
   * the round done, its answer `{round, results}` made of the items' results. Commit is idempotent: a round already done is fenced and
   * nothing is written, so committing it twice records its calls once; with `owner`, so is a
   * round another coordinator owns.
   */
  commitRound(input: CommitRoundInput): Promise<CommittedRound>;
  getRound(session: string, run: string, round: string): Promise<RoundRecord | null>;
  /**
   * A durability point before a round's answer read back is served to a retry under its
   * Idempotency-Key (API.md v1.2): what was read is acknowledged by TD_REDIS_REPLICA_ACKS replicas,
   * else a RequestError `unavailable`. Absent (or a no-op) where nothing can be lost by a failover.
   */
  confirmServed?(ref: RoundRef): Promise<void>;

  /** Store reachable (for /readyz). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
