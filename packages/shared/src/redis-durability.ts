import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis-connect.js';

/**
 * A durability point that was not acknowledged by enough replicas (API.md v1.2 "Durability when
 * Redis fails over"): what was written may be thrown away by a failover, so nothing may act on it.
 * The HTTP edge answers it 503 `unavailable` with `Retry-After`.
 */
export class NotDurableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotDurableError';
  }
}

/** Whether an error is a durability point left unacknowledged (matched by name: a second module copy may throw it). */
export function isNotDurable(e: unknown): boolean {
  return e instanceof Error && e.name === 'NotDurableError';
}

/**
 * Redis refusing or not answering a command in a way a retry a moment later may get past: a
 * primary without enough replicas (NOREPLICAS), a demoted primary (READONLY), a cluster without a
 * primary for the slot (CLUSTERDOWN, TRYAGAIN, MASTERDOWN), a node loading its data (LOADING),
 * a command past its deadline (TD_REDIS_COMMAND_TIMEOUT_MS), a node unreachable.
 */
const REDIS_REFUSAL =
  /\b(NOREPLICAS|READONLY|CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|UNBLOCKED) |WAIT cannot be used with replica|Command timed out|Too many Cluster redirections|Connection is closed|Reached the max retries per request|Stream isn't writeable|ECONNREFUSED|ECONNRESET|Failed to refresh slots cache|None of startup nodes is available/;

/** Whether an error is Redis refusing or unreachable for now (retryable: 503 `unavailable`), not a bug. */
export function isRedisRefusal(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  return (
    isNotDurable(e) ||
    e.name === 'MaxRetriesPerRequestError' ||
    e.name === 'ClusterAllFailedError' ||
    REDIS_REFUSAL.test(e.message)
  );
}

/**
 * A WAIT refused because its node is now a replica: asked after the demotion ("WAIT cannot be used
 * with replica instances") or blocked in it when it came ("UNBLOCKED force unblock … master -> replica").
 */
const DEMOTED = /WAIT cannot be used with replica|READONLY|UNBLOCKED/;

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** A connection's WAITs: one in flight, and the one that will follow it (joined by every point asked meanwhile). */
interface WaitLine {
  inFlight: Promise<number> | undefined;
  next: Promise<number> | undefined;
}

/**
 * The durability points of one process (TD_REDIS_REPLICA_ACKS, TD_REDIS_WAIT_MS): after a write,
 * `confirm(key)` sends `WAIT acks waitMs` on the connection of the node that holds `key` (the
 * connection that made the write, so WAIT covers it) and throws NotDurableError when fewer
 * replicas acknowledged it in time. WAITs on one connection are grouped: a point asked while one
 * is in flight joins the next, which covers every write made before it is sent (a WAIT blocks its
 * connection, so one per point would queue every command behind each other's wait). With 0 acks
 * nothing is sent.
 */
export class ReplicaAcks {
  private readonly lines = new WeakMap<Redis, WaitLine>();

  constructor(
    private readonly redis: RedisClient,
    readonly acks: number,
    private readonly waitMs: number,
  ) {}

  get enabled(): boolean {
    return this.acks > 0;
  }

  /** Resolves once `acks` replicas hold every write this process made to `key`'s node; `what` names the point in the error. */
  async confirm(key: string, what: string): Promise<void> {
    if (this.acks <= 0) return;
    const node = this.nodeOf(key);
    let acked: number;
    try {
      acked = await this.waitOn(node);
    } catch (e) {
      // The node was demoted (CLUSTER FAILOVER, a paused primary rejoining) after the write: the
      // write may be on the new primary or thrown away; nothing here can tell, so it is not durable.
      if (!DEMOTED.test(errorText(e))) throw e;
      if (this.redis.isCluster) (this.redis as Cluster).refreshSlotsCache();
      throw new NotDurableError(`${what} was written to a Redis node that is no longer a primary (a failover)`);
    }
    if (acked < this.acks)
      throw new NotDurableError(
        `${what} was acknowledged by ${acked} of the ${this.acks} Redis replicas TD_REDIS_REPLICA_ACKS asks for within ${this.waitMs} ms (TD_REDIS_WAIT_MS); a failover could lose it`,
      );
  }

  /** The connection of the primary that holds `key`: the client itself, or the cluster's node of the key's slot. */
  private nodeOf(key: string): Redis {
    if (!this.redis.isCluster) return this.redis as Redis;
    const cluster = this.redis as Cluster;
    const slot = calculateSlot(key);
    const primary = cluster.slots[slot]?.[0];
    const node = primary
      ? cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === primary)
      : undefined;
    if (!node)
      throw new NotDurableError(`no primary of the Redis Cluster is known for slot ${slot} (a failover under way?)`);
    return node;
  }

  private waitOn(node: Redis): Promise<number> {
    let line = this.lines.get(node);
    if (!line) {
      line = { inFlight: undefined, next: undefined };
      this.lines.set(node, line);
    }
    if (!line.inFlight) return this.send(node, line);
    if (line.next) return line.next;
    const l = line;
    const sendNext = () => this.send(node, l);
    l.next = line.inFlight.then(sendNext, sendNext);
    return l.next;
  }

  private send(node: Redis, line: WaitLine): Promise<number> {
    line.next = undefined;
    const sent = node.wait(this.acks, this.waitMs).then(Number);
    line.inFlight = sent;
    const clear = () => {
      if (line.inFlight === sent) line.inFlight = undefined;
    };
    sent.then(clear, clear);
    return sent;
  }
}
