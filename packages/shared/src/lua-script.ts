import { createHash } from 'node:crypto';

/**
 * What running a script needs of a Redis connection (an ioredis node or cluster), so this package
 * does not depend on the client library.
 */
export interface ScriptClient {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(lua: string, numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

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
  redis: ScriptClient,
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
