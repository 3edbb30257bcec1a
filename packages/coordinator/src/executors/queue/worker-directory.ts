import { type RedisKeys, tryParseJson, type WorkerAnnouncement } from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';

/** The workers of a deployment as their announcements in Redis tell them: who is alive, and which handlers they have. */
export class WorkerDirectory {
  private handlersRead: { at: number; names: Promise<ReadonlySet<string>> } | undefined;
  private handlersRefresh: Promise<ReadonlySet<string>> | undefined;

  /** `handlerCacheMs`: how long handlerNames() reuses what it read before reading again. */
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly handlerCacheMs: number,
  ) {}

  /**
   * Union of the handler names announced by live workers, read at most once a `handlerCacheMs`.
   * A set older than that is still answered while a fresh one is read in the background (so no
   * round waits on the refresh), up to twice that age; older than that, or none yet, it is
   * awaited. A departed worker's announcement outlives it by up to 3 heartbeats anyway.
   */
  handlerNames(): Promise<ReadonlySet<string>> {
    const now = Date.now();
    const known = this.handlersRead;
    if (known && now - known.at <= this.handlerCacheMs) return known.names;
    if (!this.handlersRefresh) {
      const refresh = this.liveWorkers().then((workers) => new Set(workers.flatMap((w) => w.handlers)));
      this.handlersRefresh = refresh;
      refresh.then(
        () => {
          this.handlersRead = { at: now, names: refresh };
          this.handlersRefresh = undefined;
        },
        () => {
          this.handlersRefresh = undefined;
        },
      );
    }
    if (known && now - known.at <= 2 * this.handlerCacheMs) return known.names;
    return this.handlersRefresh;
  }

  /** How many workers announced themselves within their TTL (0 while Redis is unreachable, for /readyz). */
  async workersAlive(): Promise<number> {
    if (this.redis.status !== 'ready') return 0;
    return this.redis.zcount(this.keys.workersAlive(), `(${Date.now()}`, '+inf');
  }

  /** The announcements of live workers (id, handlers, concurrency, host). */
  async liveWorkers(): Promise<WorkerAnnouncement[]> {
    const ids = await this.redis.zrangebyscore(this.keys.workersAlive(), `(${Date.now()}`, '+inf');
    if (ids.length === 0) return [];
    const values = await this.redis.mget(...ids.map((id) => this.keys.worker(id)));
    return values.map((v) => tryParseJson(v) as WorkerAnnouncement | undefined).filter((w) => w !== undefined);
  }
}
