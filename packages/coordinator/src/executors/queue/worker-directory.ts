import type { AnnouncedTool } from '@tool-dispatch/shared';
import { type RedisClient, type RedisKeys, tryParseJson, type WorkerAnnouncement } from '@tool-dispatch/shared/redis';

/** What the live workers' announcements say, read together: handler names and MCP tools. */
interface Snapshot {
  handlers: ReadonlySet<string>;
  tools: readonly AnnouncedTool[];
}

/** This coordinator's TD_QUEUE_SHARDS, and where a live worker announcing another number is said. */
interface ShardCheck {
  queueShards: number;
  onMismatch(line: string): void;
}

/** How long a worker that stopped announcing itself without leaving still counts (a Redis node away longer than 3 heartbeats). */
export const LAPSED_GRACE_MS = 15_000;

/** The workers of a deployment as their announcements in Redis tell them: who is alive, and which handlers they have. */
export class WorkerDirectory {
  private handlersRead: { at: number; snapshot: Snapshot } | undefined;
  private handlersRefresh: Promise<Snapshot> | undefined;
  /** The tools last read, handed out again while the announcements say the same (the catalog compares by identity). */
  private tools: { key: string; list: readonly AnnouncedTool[] } = { key: '', list: [] };
  /** Each listed worker's last announcement read while it was live (see liveWorkers). */
  private readonly lastSeen = new Map<string, WorkerAnnouncement>();
  /** Workers already said to consume another number of shards than this coordinator fills. */
  private readonly mismatched = new Set<string>();

  /**
   * `handlerCacheMs`: how long handlerNames() reuses what it read before reading again.
   * `shards`: this coordinator's TD_QUEUE_SHARDS, and where a live worker announcing another
   * number is said (once per worker).
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly handlerCacheMs: number,
    private readonly shards?: ShardCheck,
  ) {}

  /**
   * Union of the handler names announced by live workers, read at most once a `handlerCacheMs`.
   * A set older than that is still answered while a fresh one is read in the background (so no
   * round waits on the refresh), up to twice that age; older than that, or none yet, it is
   * awaited. A departed worker's announcement outlives it by up to 3 heartbeats anyway.
   */
  async handlerNames(): Promise<ReadonlySet<string>> {
    return (await this.snapshot()).handlers;
  }

  /**
   * The MCP tools live workers announce, merged by name (a name two workers announce differently:
   * the most recent announcement's); the same array while they announce the same. Read like
   * handlerNames (the same read, the same cache); the array itself while the cache answers.
   */
  announcedTools(): readonly AnnouncedTool[] | Promise<readonly AnnouncedTool[]> {
    const known = this.snapshot();
    return known instanceof Promise ? known.then((s) => s.tools) : known.tools;
  }

  /** The snapshot the cache holds when it may answer, else the read under way. */
  private snapshot(): Snapshot | Promise<Snapshot> {
    const now = Date.now();
    const known = this.handlersRead;
    if (known && now - known.at <= this.handlerCacheMs) return known.snapshot;
    if (!this.handlersRefresh) {
      const refresh = this.liveWorkers().then((workers) => this.snapshotOf(workers));
      this.handlersRefresh = refresh;
      refresh.then(
        (snapshot) => {
          this.handlersRead = { at: now, snapshot };
          this.handlersRefresh = undefined;
        },
        () => {
          this.handlersRefresh = undefined;
        },
      );
    }
    if (known && now - known.at <= 2 * this.handlerCacheMs) return known.snapshot;
    return this.handlersRefresh;
  }

  private snapshotOf(workers: readonly WorkerAnnouncement[]): Snapshot {
    if (this.shards) this.checkShards(workers, this.shards);
    const handlers = new Set(workers.flatMap((w) => w.handlers));
    const byName = new Map<string, AnnouncedTool>();
    for (const w of [...workers].sort((a, b) => a.at - b.at)) for (const t of w.tools ?? []) byName.set(t.name, t);
    const list = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
    const key = JSON.stringify(list);
    if (key !== this.tools.key) this.tools = { key, list };
    return { handlers, tools: this.tools.list };
  }

  private checkShards(workers: readonly WorkerAnnouncement[], shards: ShardCheck): void {
    for (const w of workers) {
      const theirs = w.queueShards ?? 1;
      if (theirs === shards.queueShards || this.mismatched.has(w.id)) continue;
      this.mismatched.add(w.id);
      shards.onMismatch(
        `TD_QUEUE_SHARDS MISMATCH: worker ${w.id} (pid ${w.pid} on ${w.host}) consumes ${theirs} shard(s) of each queue, this coordinator fills ${shards.queueShards}; calls on shards nobody consumes wait until their deadline: give every process of prefix ${this.keys.prefix} the same TD_QUEUE_SHARDS`,
      );
    }
  }

  /** How many workers announced themselves within their TTL (0 while Redis is unreachable, for /readyz). */
  async workersAlive(): Promise<number> {
    if (this.redis.status !== 'ready') return 0;
    return this.redis.zcount(this.keys.workersAlive(), `(${Date.now()}`, '+inf');
  }

  /**
   * The announcements of live workers (id, handlers, concurrency, host). A worker this directory
   * saw live whose announcement lapsed less than LAPSED_GRACE_MS ago without it leaving (still
   * listed, so it did not close) counts on its last announcement read while it was live: with its
   * Redis node away its heartbeats did not land, and the node comes back with the announcement
   * expired. Without this, the rounds of the
   * first moments after a node's return were answered "no handler is registered" (seen on a
   * cluster after a primary was down 6 s).
   */
  async liveWorkers(): Promise<WorkerAnnouncement[]> {
    const now = Date.now();
    const listed = await this.redis.zrangebyscore(
      this.keys.workersAlive(),
      `(${now - LAPSED_GRACE_MS}`,
      '+inf',
      'WITHSCORES',
    );
    const ids: string[] = [];
    const lapsed = new Set<string>();
    for (let i = 0; i < listed.length; i += 2) {
      const id = listed[i] as string;
      ids.push(id);
      if (Number(listed[i + 1]) <= now) lapsed.add(id);
    }
    const listedIds = new Set(ids);
    for (const id of this.lastSeen.keys()) if (!listedIds.has(id)) this.lastSeen.delete(id);
    if (ids.length === 0) return [];
    const values = await this.redis.mget(...ids.map((id) => this.keys.worker(id)));
    const workers: WorkerAnnouncement[] = [];
    ids.forEach((id, i) => {
      if (lapsed.has(id)) {
        const last = this.lastSeen.get(id);
        if (last) workers.push(last);
        return;
      }
      const announced = tryParseJson(values[i] ?? null) as WorkerAnnouncement | undefined;
      if (!announced) return;
      this.lastSeen.set(id, announced);
      workers.push(announced);
    });
    return workers;
  }
}
