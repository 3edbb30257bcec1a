// RedisLimits' key layout (a limit's keys, a batch's key, a stage's argument) and its peek.
import type { RedisKeys } from '@tool-dispatch/shared/redis';
import type { LimitNow } from '../rules/named-limits.js';
import { type RedisClient, runScript } from '../support/redis-client.js';
import type { HoldTimes } from './hold-times.js';
import type { LimitStage } from './limits.js';
import { scopeKey } from './limits.js';
import { parsePeekLimitReply, peekLimitScript } from './lua/peekLimit-2.lua.js';

/** Stages of one scope in a row: taken in one script (they share a hash slot). */
export interface Group {
  stages: LimitStage[];
  /** Each stage's key base (RedisKeys.limit). */
  bases: string[];
}

/** Calls asking for the same stages (bases and concurrencies) share a batch. */
export const batchKey = (bases: readonly string[], stages: readonly LimitStage[]) =>
  stages.map((s, i) => `${bases[i]}\u0000${stageArg(s)}`).join('\u0001');

/** A stage as acquireLimits takes it: `<concurrency>`, or `<concurrency>/<count>/<window ms>` with a rate. */
export const stageArg = (s: LimitStage) =>
  s.rate ? `${s.concurrency}/${s.rate.count}/${s.rate.windowMs}` : String(s.concurrency);

const SUFFIXES = [':held', ':wait', ':wexp', ':seq'] as const;
/** The four keys of a limit every script but peek takes. */
export const keysOf = (base: string) => SUFFIXES.map((s) => base + s);
/** acquireLimits' keys of a stage: the four, and its rate window. */
export const acquireKeysOf = (base: string) => [...keysOf(base), `${base}:rate`];

/** RedisLimits.peek: each stage read in its own slot (one script per stage), with this process's hold times. */
export function peekLimits(
  redis: RedisClient,
  keys: RedisKeys,
  holds: HoldTimes,
  stages: readonly LimitStage[],
): Promise<LimitNow[]> {
  return Promise.all(
    stages.map(async function peekStage(stage) {
      const base = keys.limit(scopeKey(stage.scope), stage.name);
      const args = [stage.rate?.count ?? 0, stage.rate?.windowMs ?? 0];
      const reply = await runScript(redis, peekLimitScript, [`${base}:held`, `${base}:rate`], args);
      return { ...parsePeekLimitReply(reply), meanHoldMs: holds.meanMs(stage.name) };
    }),
  );
}
