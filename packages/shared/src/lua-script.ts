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
  /**
   * The error a parse function throws for a reply not of the shape the script's header states (a
   * bug, never an outcome): names the script, what was expected and what came back.
   */
  unexpectedReply(expected: string, reply: unknown): Error;
}

/** How much of a malformed reply an error quotes (a round's reply can hold a whole session). */
const QUOTED_REPLY_CHARS = 200;

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
    unexpectedReply: function unexpectedReply(expected, reply) {
      return new Error(`${name} script: expected ${expected}, got ${quoteReply(reply)}`);
    },
  };
}

function quoteReply(reply: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(reply) ?? String(reply);
  } catch {
    text = String(reply);
  }
  return text.length > QUOTED_REPLY_CHARS ? `${text.slice(0, QUOTED_REPLY_CHARS)}…` : text;
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
