// long-file: the Redis store is one seam whose domain operations (begin, commit, takeover, sessions, dedupe, cache) each add their durability point (WAIT); a split would scatter one implementation of store.ts over files.
import { DEFAULT_ROUND_RETENTION_MS } from '@tool-dispatch/shared';
import {
  isNotDurable,
  type RedisKeys,
  type ReplicaAcks,
  redisKeys,
  SESSION_TTL_MS,
  tryParseJson,
} from '@tool-dispatch/shared/redis';
import type {
  CachedResult,
  DedupeEntry,
  DedupeInvalidation,
  Grant,
  GrantMatch,
  HistoryEntry,
  RoundRef,
  SessionState,
  StoredPlanned,
} from '../model.js';
import { RequestError } from '../request-error.js';
import { EventStreamWriter } from '../support/event-stream.js';
import { type RedisClient, runScript } from '../support/redis-client.js';
import { addSessionMembersScript, parseAddSessionMembersReply } from './lua/addSessionMembers-1.lua.js';
import { BeginRoundStatus, beginRoundScript, parseBeginRoundReply } from './lua/beginRound-5.lua.js';
import { CommitRoundStatus, commitRoundScript, parseCommitRoundReply } from './lua/commitRound-5n.lua.js';
import { dropDedupeScript, needsMeta, parseDropDedupeReply } from './lua/dropDedupe-2.lua.js';
import { forgetKeyScript, parseForgetKeyReply } from './lua/forgetKey-1.lua.js';
import { beginPlacesArgs, commitItemArgs, givenBackArgs, TtlPushBacks } from './redis-commit.js';
import { addGrant, type GrantsAt, listGrants, revokeGrant, useGrant } from './redis-grants.js';
import { failRound, type RoundsAt, roundRecordOf, saveDecisions, takeRound } from './redis-rounds.js';
import type {
  BeginRound,
  BeginRoundInput,
  CommitItem,
  CommitRoundInput,
  CommittedRound,
  RoundRecord,
  Store,
  TakenRound,
} from './store.js';

export interface RedisStoreOptions {
  /** A connection the caller owns (a node or a cluster); `close()` leaves it open. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
  /** Sliding TTL of every session-scoped key, refreshed on write (default 7 days). */
  sessionTtlMs?: number;
  /** TD_ROUND_RETENTION_MS (v1.3): a finished round and its idempotency key are kept this long after it ends (default a day). */
  roundRetentionMs?: number;
  /**
   * Append each round's events to the session's stream (the one RedisEventBus reads) within
   * beginRound and commitRound, with this replay window; absent, the caller publishes them.
   */
  events?: { replayMs?: number };
  /** BullMQ queue names (every shard's, `{…}` tags included): readiness probes their slots too. */
  queueNames?: readonly string[];
  /**
   * TD_REDIS_REPLICA_ACKS (API.md v1.2 durability points): a round's begin and its commit are
   * acknowledged by this many replicas (WAIT on the node of the round's slot) before the store
   * says they happened; absent or 0, no WAIT is sent.
   */
  durability?: ReplicaAcks;
}

/** Session fields kept in the `state` JSON; fetched and auto-approve live in their own hash fields. */
type StoredState = Omit<SessionState, 'fetched' | 'autoApprove'>;

/**
 * The distributed Store: each operation is one round trip (a pipeline, MULTI or one Lua script)
 * over keys sharing the session's hash tag, so it runs unchanged on Redis Cluster.
 */
/** How long a readiness probe's keys live (they are written again at each /readyz). */
const READY_PROBE_TTL_MS = 30_000;

export class RedisStore implements Store {
  private readonly redis: RedisClient;
  /** Hash tags of the slots rounds use, each probed by /readyz. */
  private readonly probeTags: readonly string[];
  private readonly keys: RedisKeys;
  private readonly ttlMs: number;
  private readonly rounds: RoundsAt;
  /** The session's TTL at a begin, its histories' at a commit: pushed back at most so often. */
  private readonly ttlDue: { session: TtlPushBacks; histories: TtlPushBacks };
  private readonly events: EventStreamWriter | undefined;
  readonly appendsEvents: boolean;
  private readonly durability: ReplicaAcks | undefined;

  constructor(options: RedisStoreOptions) {
    const ttl = options.sessionTtlMs ?? SESSION_TTL_MS;
    if (!Number.isInteger(ttl) || ttl < 1) throw new Error(`sessionTtlMs must be a positive integer, got ${ttl}`);
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.ttlMs = ttl;
    const retentionMs = options.roundRetentionMs ?? DEFAULT_ROUND_RETENTION_MS;
    if (!Number.isInteger(retentionMs) || retentionMs < 1)
      throw new Error(`roundRetentionMs must be a positive integer, got ${retentionMs}`);
    this.rounds = { redis: this.redis, retentionMs };
    this.ttlDue = { session: new TtlPushBacks(ttl), histories: new TtlPushBacks(ttl) };
    this.events = options.events ? new EventStreamWriter(this.keys, options.events.replayMs) : undefined;
    this.appendsEvents = this.events !== undefined;
    this.durability = options.durability?.enabled ? options.durability : undefined;
    this.probeTags = ['{s:_ready}', '{c:_ready}', '{w}', '{t:_ready}', ...(options.queueNames ?? [])];
  }

  async getSession(session: string): Promise<SessionState | null> {
    return sessionOf(await this.redis.hgetall(this.keys.session(session)));
  }

  async putSession(state: SessionState): Promise<void> {
    const key = this.keys.session(state.id);
    const { fetched, autoApprove, ...rest } = state;
    const fields: string[] = ['state', JSON.stringify(rest satisfies StoredState)];
    let seq = 0;
    for (const name of new Set(fetched)) fields.push(`f:${name}`, String(++seq));
    if (autoApprove === 'all') fields.push('all', '1');
    else for (const name of new Set(autoApprove)) fields.push(`a:${name}`, String(++seq));
    fields.push('seq', String(seq));
    await this.redis
      .multi()
      .del(key)
      .hset(key, ...fields)
      .pexpire(key, this.ttlMs)
      .exec();
  }

  async markFetched(session: string, names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    const keys = [this.keys.session(session)];
    parseAddSessionMembersReply(
      await runScript(this.redis, addSessionMembersScript, keys, ['f:', this.ttlMs, ...names]),
    );
  }

  addGrant(session: string, grant: Grant): Promise<boolean> {
    return addGrant(this.grantsOf(session), grant);
  }

  listGrants(session: string): Promise<Grant[]> {
    return listGrants(this.grantsOf(session));
  }

  useGrant(session: string, match: GrantMatch): Promise<Grant | null> {
    return useGrant(this.grantsOf(session), match);
  }

  revokeGrant(session: string, grantId: string): Promise<boolean> {
    return revokeGrant(this.grantsOf(session), grantId);
  }

  private grantsOf(session: string): GrantsAt {
    return { redis: this.redis, key: this.keys.grants(session), ttlMs: this.ttlMs };
  }

  async addAutoApprove(session: string, tool: string): Promise<void> {
    const keys = [this.keys.session(session)];
    parseAddSessionMembersReply(await runScript(this.redis, addSessionMembersScript, keys, ['a:', this.ttlMs, tool]));
  }

  async findDedupe(session: string, run: string, key: string): Promise<DedupeEntry | null> {
    const entry = tryParseJson(await this.redis.hget(this.keys.dedupe(session, run), key));
    return (entry as DedupeEntry | undefined) ?? null;
  }

  async findDedupeMany(session: string, run: string, keys: readonly string[]): Promise<Map<string, DedupeEntry>> {
    const found = new Map<string, DedupeEntry>();
    if (keys.length === 0) return found;
    const values = await this.redis.hmget(this.keys.dedupe(session, run), ...keys);
    values.forEach((v, i) => {
      const entry = tryParseJson(v) as DedupeEntry | undefined;
      if (entry) found.set(keys[i] as string, entry);
    });
    return found;
  }

  async putDedupe(session: string, run: string, entry: DedupeEntry): Promise<void> {
    const entries = this.keys.dedupe(session, run);
    const meta = this.keys.dedupeMeta(session, run);
    const paths = entry.paths ?? null;
    const write = this.redis.multi().hset(entries, entry.key, JSON.stringify(entry)).pexpire(entries, this.ttlMs);
    if (needsMeta(entry))
      write.hset(meta, entry.key, JSON.stringify({ tool: entry.tool, paths })).pexpire(meta, this.ttlMs);
    await write.exec();
  }

  async dropDedupe(session: string, run: string, invalidation: DedupeInvalidation): Promise<number> {
    const paths = invalidation.paths === undefined ? '' : JSON.stringify(invalidation.paths);
    // An empty paths list meets nothing (cjson cannot tell [] from {} when encoding, so decide here).
    if (invalidation.paths?.length === 0) return 0;
    const keys = [this.keys.dedupe(session, run), this.keys.dedupeMeta(session, run)];
    return parseDropDedupeReply(await runScript(this.redis, dropDedupeScript, keys, [invalidation.tool, paths]));
  }

  async findCached(tenant: string, key: string): Promise<CachedResult | null> {
    const value = tryParseJson(await this.redis.get(this.keys.cache(tenant, key)));
    return (value as CachedResult | undefined) ?? null;
  }

  async findCachedMany(tenant: string, keys: readonly string[]): Promise<Map<string, CachedResult>> {
    const found = new Map<string, CachedResult>();
    if (keys.length === 0) return found;
    // One tenant's cache keys share its hash tag, so one MGET serves them on a cluster too.
    const values = await this.redis.mget(...keys.map((key) => this.keys.cache(tenant, key)));
    values.forEach((v, i) => {
      const value = tryParseJson(v) as CachedResult | undefined;
      if (value) found.set(keys[i] as string, value);
    });
    return found;
  }

  async putCached(tenant: string, key: string, value: CachedResult, ttlMs: number): Promise<void> {
    const px = Math.max(1, Math.ceil(ttlMs));
    await this.redis.set(this.keys.cache(tenant, key), JSON.stringify(value), 'PX', px);
  }

  async commitRound(input: CommitRoundInput): Promise<CommittedRound> {
    const { session, tenant, run, round, items } = input;
    const k = this.keys;
    const events = input.completed && this.events?.prepare(session);
    const keys = [
      k.round(session, run, round),
      k.history(session),
      k.dedupe(session, run),
      k.dedupeMeta(session, run),
      k.events(session),
    ];
    const args = [
      this.ttlMs,
      input.owner ?? '',
      JSON.stringify(round),
      ...(events ? events.args : ['0', 0, '0']),
      events ? JSON.stringify(input.completed) : '',
      this.ttlDue.histories.take(session),
      this.rounds.retentionMs,
      ...givenBackArgs(input.giveBack),
      ...commitItemArgs(this.keys, session, items, keys),
    ];
    // The places' keys after the tool histories (their indexes are the items').
    if (input.giveBack?.tickets.length) keys.push(input.giveBack.held, input.giveBack.wait);
    // The commit keeps the round for the retention itself (ARGV[9]).
    const status = parseCommitRoundReply(await runScript(this.redis, commitRoundScript, keys, args));
    if (status === CommitRoundStatus.Fenced) return { fenced: true };
    events?.done();
    // No answer leaves before its commit is acknowledged; unacknowledged, the round is kept for a
    // retry, which finds what survived.
    await this.durable(keys[0] as string, `round ${round}'s commit`, 'no answer is sent before it is');
    await this.putCachedItems(tenant, items);
    if (!input.giveBack?.tickets.length) return { fenced: false };
    return { fenced: false, waiters: status === CommitRoundStatus.OkWaiters };
  }

  /** The cache is tenant-scoped (another hash slot): written after the commit. */
  private async putCachedItems(tenant: string, items: readonly CommitItem[]): Promise<void> {
    const caching = items.filter((item) => item.cache);
    if (caching.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const { cache } of caching) {
      if (!cache) continue;
      const px = Math.max(1, Math.ceil(cache.ttlMs));
      pipeline.set(this.keys.cache(tenant, cache.key), JSON.stringify(cache.value), 'PX', px);
    }
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }

  takeRound(session: string, run: string, round: string, owner: string): Promise<TakenRound> {
    return takeRound(this.rounds, this.keys.round(session, run, round), owner);
  }

  saveDecisions(
    session: string,
    run: string,
    round: string,
    owner: string,
    planned: StoredPlanned[],
  ): Promise<boolean> {
    return saveDecisions(this.rounds, this.keys.round(session, run, round), owner, planned);
  }

  failRound(session: string, run: string, round: string, owner: string, error: string): Promise<boolean> {
    return failRound(this.rounds, this.keys.round(session, run, round), owner, error);
  }

  async history(session: string, tool?: string, last?: number): Promise<HistoryEntry[]> {
    const key = tool === undefined ? this.keys.history(session) : this.keys.toolHistory(session, tool);
    const items = await this.redis.lrange(key, last === undefined ? 0 : -last, -1);
    return items.map((item) => tryParseJson(item) as HistoryEntry).filter((e) => e !== undefined);
  }

  async beginRound(input: BeginRoundInput, again = true): Promise<BeginRound> {
    const { session, run, round, idempotencyKey, callsHash } = input;
    const owner = input.owner ?? '';
    const events = input.started && this.events?.prepare(session);
    const dedupeKeys = input.dedupeKeys ?? [];
    const record: RoundRecord = { round, session, run, callsHash, state: 'running', createdAt: Date.now() };
    if (input.callNames) record.callNames = input.callNames;
    const { state: _state, ...stored } = record;
    const k = this.keys;
    const keys = [
      k.round(session, run, round),
      k.idempotency(session, run, idempotencyKey ?? '-'),
      k.session(session),
      k.events(session),
      k.dedupe(session, run),
    ];
    const places = input.places;
    if (places) keys.push(places.held, places.wait);
    const args = [
      round,
      callsHash,
      JSON.stringify(stored),
      this.ttlMs,
      idempotencyKey === undefined ? '0' : '1',
      owner,
      owner ? JSON.stringify(input.calls ?? []) : '',
      ...(events ? events.args : ['0', 0, '0']),
      events ? JSON.stringify(input.started) : '',
      this.ttlDue.session.take(session),
      ...beginPlacesArgs(places),
      ...dedupeKeys,
    ];
    const reply = parseBeginRoundReply(await runScript(this.redis, beginRoundScript, keys, args));
    if (reply.status === BeginRoundStatus.NoSession) return { kind: reply.status };
    if (reply.status === BeginRoundStatus.New) {
      events?.done();
      // A begin that a failover could lose runs nothing (a retry would begin it again).
      await this.durable(keys[0] as string, `round ${round}'s begin`, 'nothing of it ran');
      const state = sessionOf(fieldsToHash(reply.session));
      if (!state) throw new Error(`beginRound: session ${session} could not be read`);
      const dedupe = new Map<string, DedupeEntry>();
      dedupeKeys.forEach((key, i) => {
        const entry = tryParseJson(reply.dedupe[i]) as DedupeEntry | undefined;
        if (entry) dedupe.set(key, entry);
      });
      const begun: BeginRound = { kind: 'new', record, session: state, dedupe };
      if (places) begun.placesTaken = reply.placesTaken;
      return begun;
    }
    const held = await this.getRound(session, run, reply.round);
    // The key outlived its round (TD_ROUND_RETENTION_MS passed): it is forgotten, and begins this round.
    if (!held && again && idempotencyKey !== undefined) {
      parseForgetKeyReply(await runScript(this.redis, forgetKeyScript, [keys[1] as string], [reply.round]));
      return this.beginRound(input, false);
    }
    // Still there after that (deleted by hand meanwhile): report what is known.
    const fallback: RoundRecord = { round: reply.round, session, run, callsHash: '', state: 'running', createdAt: 0 };
    return { kind: reply.status, record: held ?? fallback };
  }

  /**
   * A durability point: the writes to `key`'s node acknowledged by TD_REDIS_REPLICA_ACKS replicas,
   * or a RequestError `unavailable` (503 with Retry-After) naming the point and `consequence`.
   */
  private async durable(key: string, point: string, consequence: string): Promise<void> {
    if (!this.durability) return;
    try {
      await this.durability.confirm(key, point);
    } catch (e) {
      if (!isNotDurable(e)) throw e;
      throw new RequestError(
        'unavailable',
        `${(e as Error).message}; ${consequence}: send the round again under the same Idempotency-Key in a moment`,
        true,
      );
    }
  }

  /**
   * Store.confirmServed: a write on the round record's node (a key beside it), so this
   * connection's WAIT covers everything that node had when the answer was read (a replica that
   * acknowledges it holds the whole stream before it), the commit of another coordinator included.
   */
  async confirmServed(ref: RoundRef): Promise<void> {
    if (!this.durability) return;
    const key = this.keys.round(ref.session, ref.run, ref.round);
    // A key of its own in the round's slot: the round's TTL (its retention) is left as it is.
    await this.redis.set(`${key}:served`, '1', 'PX', READY_PROBE_TTL_MS);
    await this.durable(key, `round ${ref.round}'s answer`, 'it is not served before it is');
  }

  async getRound(session: string, run: string, round: string): Promise<RoundRecord | null> {
    return roundRecordOf(await this.redis.hgetall(this.keys.round(session, run, round)));
  }

  /**
   * Whether rounds can use the store (`/readyz`): a write and a read back under the deployment's
   * prefix in each kind of slot rounds use (a session's, a coordinator's, the workers', a
   * tenant's, each queue shard's), not a PING: a Redis that answers PING but refuses or redirects those (a cluster
   * node reached as one Redis answers MOVED) is not ready.
   */
  async ping(): Promise<boolean> {
    try {
      const token = `${Date.now()}-${Math.random()}`;
      const p = this.keys.prefix;
      const probes = this.probeTags.map((tag) => `${p}:${tag}:ready-probe`);
      await Promise.all(probes.map((k) => this.redis.set(k, token, 'PX', READY_PROBE_TTL_MS)));
      const read = await Promise.all(probes.map((k) => this.redis.get(k)));
      return read.every((v) => v === token);
    } catch {
      return false;
    }
  }

  /** The connection belongs to the caller, who closes it. */
  async close(): Promise<void> {}
}

/** A session as its hash holds it (`state` JSON plus fetched / auto-approved fields), or null. */
function sessionOf(hash: Record<string, string>): SessionState | null {
  const state = tryParseJson(hash.state) as StoredState | undefined;
  if (!state) return null;
  const members = (prefix: string) =>
    Object.entries(hash)
      .filter(([field]) => field.startsWith(prefix))
      .sort((a, b) => Number(a[1]) - Number(b[1]))
      .map(([field]) => field.slice(prefix.length));
  return { ...state, fetched: members('f:'), autoApprove: hash.all === '1' ? 'all' : members('a:') };
}

function fieldsToHash(fields: readonly string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) hash[fields[i] as string] = fields[i + 1] as string;
  return hash;
}
