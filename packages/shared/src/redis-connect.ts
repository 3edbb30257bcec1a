import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ConfigError } from './errors.js';
import type { RedisConnectionOptions } from './redis-connection.js';

/** A Redis connection: a single node or a cluster (every multi-key operation stays in one hash slot). */
export type RedisClient = Redis | Cluster;

/** Where a deployment's Redis is: one node (REDIS_URL) or a cluster's seed nodes (REDIS_CLUSTER_NODES). */
export type RedisTarget = { url: string } | { clusterNodes: readonly string[] };

/** Options for a connection, whichever the target (ioredis' own; a cluster passes `tls` and the retries to every node). */
export type ConnectOptions = Pick<RedisOptions, 'maxRetriesPerRequest' | 'enableOfflineQueue' | 'lazyConnect'> &
  RedisConnectionOptions;

/** One seed node of REDIS_CLUSTER_NODES: `host:port`, or a `redis://`/`rediss://` URL with credentials. */
interface SeedNode {
  host: string;
  port: number;
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * Reads REDIS_CLUSTER_NODES (API.md): a comma list of `host:port` or `redis://` / `rediss://` URLs;
 * credentials and TLS are taken from the URLs (the first that has them). A ConfigError names a
 * node that is neither.
 */
export function parseClusterNodes(raw: string): SeedNode[] {
  const nodes = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(seedNodeOf);
  if (nodes.length === 0)
    throw new ConfigError('REDIS_CLUSTER_NODES names no node (host:port or redis:// URLs, comma-separated)');
  return nodes;
}

function seedNodeOf(spec: string): SeedNode {
  const bad = () =>
    new ConfigError(
      `REDIS_CLUSTER_NODES: ${JSON.stringify(spec)} is neither host:port nor a redis:// or rediss:// URL`,
    );
  if (!spec.includes('://')) {
    const m = spec.match(/^\[?([^\]]+?)\]?:(\d{1,5})$/);
    if (!m?.[1] || !m[2]) throw bad();
    return { host: m[1], port: Number(m[2]), tls: false };
  }
  let u: URL;
  try {
    u = new URL(spec);
  } catch {
    throw bad();
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw bad();
  const node: SeedNode = {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || 6379),
    tls: u.protocol === 'rediss:',
  };
  if (u.username) node.username = decodeURIComponent(u.username);
  if (u.password) node.password = decodeURIComponent(u.password);
  return node;
}

/** What every node of a cluster gets: credentials and TLS from the seed URLs. */
interface NodeOptions {
  maxRetriesPerRequest: number | null;
  commandTimeout?: number;
  username?: string;
  password?: string;
  tls?: RedisConnectionOptions['tls'];
}

/** The ioredis options every node of a cluster gets: credentials and TLS from the seed URLs. */
function nodeOptions(
  nodes: readonly SeedNode[],
  options: { maxRetriesPerRequest: number | null; commandTimeout?: number },
): NodeOptions {
  const withAuth = nodes.find((n) => n.password !== undefined || n.username !== undefined);
  const redisOptions: NodeOptions = { ...options };
  if (withAuth?.username) redisOptions.username = withAuth.username;
  if (withAuth?.password) redisOptions.password = withAuth.password;
  if (nodes.some((n) => n.tls)) redisOptions.tls = {};
  return redisOptions;
}

/** How long a cluster command keeps being sent again while its slot's primary is unreachable. */
export const CLUSTER_PATIENCE_MS = 12_000;
/** The wait between those sends. */
const CLUSTER_RETRY_DELAY_MS = 250;
/**
 * How often a cluster client with a command deadline reads the slot map again, and how long one
 * node may take to give it (the next node is asked after): a primary that stops answering is
 * replaced by its replica within the cluster's node timeout, and the client follows within this.
 */
export const SLOTS_REFRESH_INTERVAL_MS = 1_000;
const SLOTS_REFRESH_TIMEOUT_MS = 500;

/**
 * A connection to the deployment's Redis: `new Redis(url)`, or an ioredis `Cluster` from the seed
 * nodes (reads and writes on the primaries; a moved slot is followed).
 */
export function connectRedis(target: RedisTarget, options: ConnectOptions = {}): RedisClient {
  const { commandTimeoutMs, ...ioOptions } = options;
  const deadline = commandTimeoutMs !== undefined ? { commandTimeout: commandTimeoutMs } : {};
  if ('url' in target) return new Redis(target.url, { ...ioOptions, ...deadline });
  const nodes = parseClusterNodes(target.clusterNodes.join(','));
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    {
      redisOptions: {
        ...nodeOptions(nodes, { maxRetriesPerRequest: options.maxRetriesPerRequest ?? null, ...deadline }),
        ...(options.tls ? { tls: options.tls } : {}),
      },
      scaleReads: 'master',
      // A command meeting a primary that is down (connection closed, CLUSTERDOWN) waits and is sent
      // again, up to CLUSTER_PATIENCE_MS in all, so a primary restarting or failing over within
      // that is ridden out; later it fails (the HTTP edge answers 503 unavailable).
      maxRedirections: CLUSTER_PATIENCE_MS / CLUSTER_RETRY_DELAY_MS,
      retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
      retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
      retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
      // With a deadline, the slot map is read again every second (a node that times out is
      // skipped after SLOTS_REFRESH_TIMEOUT_MS), so commands move to a promoted replica.
      ...(commandTimeoutMs !== undefined
        ? {
            slotsRefreshInterval: SLOTS_REFRESH_INTERVAL_MS,
            slotsRefreshTimeout: Math.min(SLOTS_REFRESH_TIMEOUT_MS, commandTimeoutMs),
          }
        : {}),
      ...(options.enableOfflineQueue !== undefined ? { enableOfflineQueue: options.enableOfflineQueue } : {}),
      ...(options.lazyConnect !== undefined ? { lazyConnect: options.lazyConnect } : {}),
    },
  );
}

/**
 * A new connection with the same options (for blocking reads and pub/sub, which tie a connection
 * up) but no command deadline: a blocking read waits longer than one by design, and a subscriber
 * only listens.
 */
export function duplicateClient(redis: RedisClient): RedisClient {
  if (!redis.isCluster) return (redis as Redis).duplicate({ commandTimeout: undefined });
  const cluster = redis as Cluster;
  const { commandTimeout: _deadline, ...redisOptions } = cluster.options.redisOptions ?? {};
  // ioredis's own redisOptions type refuses its own options back (exactOptionalPropertyTypes).
  return cluster.duplicate(undefined, { redisOptions } as Parameters<Cluster['duplicate']>[1]);
}

/** The command deadline a connection was made with (TD_REDIS_COMMAND_TIMEOUT_MS), if any. */
export function commandTimeoutOf(redis: RedisClient): number | undefined {
  return redis.isCluster
    ? (redis as Cluster).options.redisOptions?.commandTimeout
    : (redis as Redis).options.commandTimeout;
}

/** The target a config names (REDIS_CLUSTER_NODES wins the type check: only one of the two may be set). */
export function redisTargetOf(config: {
  redisUrl: string | undefined;
  redisClusterNodes?: readonly string[] | undefined;
}): RedisTarget {
  if (config.redisClusterNodes && config.redisClusterNodes.length > 0)
    return { clusterNodes: config.redisClusterNodes };
  if (config.redisUrl) return { url: config.redisUrl };
  throw new ConfigError(
    'distributed mode needs REDIS_URL (e.g. redis://127.0.0.1:6379) or REDIS_CLUSTER_NODES (e.g. 127.0.0.1:7000,127.0.0.1:7001)',
  );
}
