import { hostname } from 'node:os';
import type { RedisClient, RedisKeys, WorkerAnnouncement } from '@tool-dispatch/shared/redis';
import type { McpHub } from '../mcp/hub.js';

/** What the announcer needs: where to write, what to say, how often. */
export interface AnnouncerContext {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly id: string;
  readonly handlerNames: () => Iterable<string>;
  readonly concurrency: number;
  readonly serialConcurrency: number;
  readonly queueShards: number;
  /** Liveness announcement period; the announcement lives 3 periods. */
  readonly heartbeatMs: number;
  /** The process's MCP servers: their tools and states go out with every announcement. */
  readonly mcp: McpHub | undefined;
  readonly onError: (error: Error) => void;
}

/**
 * The worker's liveness and what it runs, for coordinators (`WorkerDirectory`): announced at start,
 * every heartbeat, and at once on an MCP change (once for a burst of them); withdrawn on close.
 */
export class Announcer {
  private readonly startedAt = Date.now();
  private heartbeat: NodeJS.Timeout | undefined;
  private stopWatchingMcp: (() => void) | undefined;
  private announcing = false;
  private stopped = false;

  constructor(private readonly context: AnnouncerContext) {}

  /** Announces once (resolves when written), then keeps announcing. */
  async start(): Promise<void> {
    const { heartbeatMs, mcp, onError } = this.context;
    await this.announce();
    this.heartbeat = setInterval(() => {
      this.announce().catch(onError);
    }, heartbeatMs);
    this.stopWatchingMcp = mcp?.onChange(() => {
      if (this.announcing || this.stopped) return;
      this.announcing = true;
      setImmediate(() => {
        this.announcing = false;
        if (!this.stopped) this.announce().catch(onError);
      });
    });
  }

  /** Stops announcing on change (the heartbeat goes on until `withdraw`: active jobs still count the worker). */
  quiet(): void {
    this.stopped = true;
  }

  /** Stops the heartbeat and takes the announcement away. */
  async withdraw(): Promise<void> {
    const { redis, keys, id } = this.context;
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.stopWatchingMcp?.();
    await redis
      .multi()
      .zrem(keys.workersAlive(), id)
      .del(keys.worker(id))
      .exec()
      .catch(() => undefined);
  }

  private announce() {
    const { redis, keys, id, mcp } = this.context;
    const now = Date.now();
    const announcement: WorkerAnnouncement = {
      id,
      handlers: [...this.context.handlerNames()],
      concurrency: this.context.concurrency,
      serialConcurrency: this.context.serialConcurrency,
      queueShards: this.context.queueShards,
      pid: process.pid,
      host: hostname(),
      startedAt: this.startedAt,
      at: now,
      ...(mcp ? { tools: mcp.tools(), mcp: mcp.status() } : {}),
    };
    const ttl = this.context.heartbeatMs * 3;
    return redis
      .multi()
      .set(keys.worker(id), JSON.stringify(announcement), 'PX', ttl)
      .zadd(keys.workersAlive(), now + ttl, id)
      .zremrangebyscore(keys.workersAlive(), '-inf', now)
      .pexpire(keys.workersAlive(), Math.max(ttl * 10, 60_000))
      .exec();
  }
}
