import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/** A Redis connection: a single node or a cluster (every multi-key operation stays in one hash slot). */
export type RedisClient = Redis | Cluster;

/**
 * A Lua script kept as a TS string constant (`<operation>-<keys>.lua.ts`), so it ships inside the
 * esbuild bundle and loads the same under vitest; no file is read at run time.
 */
export interface LuaScript {
  name: string;
  /** Keys it always takes; with `moreKeys`, the least it takes. */
  numberOfKeys: number;
  /** Takes further keys after the fixed ones (one per tool named in a round, say). */
  moreKeys: boolean;
  lua: string;
  sha: string;
}

export function defineScript(
  name: string,
  numberOfKeys: number,
  lua: string,
  options: { moreKeys?: boolean } = {},
): LuaScript {
  return {
    name,
    numberOfKeys,
    moreKeys: options.moreKeys === true,
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
  };
}

/** EVALSHA, falling back to EVAL once when the server does not know the script (restart, new node). */
export async function runScript(
  redis: RedisClient,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  if (script.moreKeys ? keys.length < script.numberOfKeys : keys.length !== script.numberOfKeys) {
    const takes = `${script.moreKeys ? 'at least ' : ''}${script.numberOfKeys}`;
    throw new Error(`${script.name} takes ${takes} keys, got ${keys.length}`);
  }
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (e) {
    if (!(e instanceof Error) || !e.message.includes('NOSCRIPT')) throw e;
    return redis.eval(script.lua, keys.length, ...keys, ...args);
  }
}

/** A new connection with the same options (for blocking reads and pub/sub, which tie a connection up). */
export function duplicateClient(redis: RedisClient): RedisClient {
  return redis.isCluster ? (redis as Cluster).duplicate() : (redis as Redis).duplicate();
}
