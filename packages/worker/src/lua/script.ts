import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script kept as a TS string constant (`<operation>-<keys>.lua.ts`), shipped inside the bundle. */
export interface LuaScript {
  name: string;
  lua: string;
  sha: string;
}

export function defineScript(name: string, lua: string): LuaScript {
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** EVALSHA, falling back to EVAL once when the server does not know the script (restart, new node). */
export async function runScript(
  redis: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (e) {
    if (!(e instanceof Error) || !e.message.includes('NOSCRIPT')) throw e;
    return redis.eval(script.lua, keys.length, ...keys, ...args);
  }
}
