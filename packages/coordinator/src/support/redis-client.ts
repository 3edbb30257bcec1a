import type { Cluster, Redis } from 'ioredis';

export { defineScript, type LuaScript, runScript } from '@tool-dispatch/shared/redis';

/** A Redis connection: a single node or a cluster (every multi-key operation stays in one hash slot). */
export type RedisClient = Redis | Cluster;

/** A new connection with the same options (for blocking reads and pub/sub, which tie a connection up). */
export function duplicateClient(redis: RedisClient): RedisClient {
  return redis.isCluster ? (redis as Cluster).duplicate() : (redis as Redis).duplicate();
}
