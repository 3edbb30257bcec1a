import type { RedisKeys } from '@tool-dispatch/shared/redis';
import { getOrCreate } from '../../support/maps.js';
import { type RedisClient, runScript } from '../../support/redis-client.js';
import { shortenOutcomesScript } from './lua/shortenOutcomes-n.lua.js';

/** Outcome hashes per shortenOutcomes script: each call of it holds Redis for well under a millisecond. */
const SHORTEN_CHUNK = 500;

/**
 * The outcome hashes of committed rounds (one a round), by namespace (coordinator), cut down to
 * `ttlMs` (OUTCOME_AFTER_COMMIT_TTL_MS) at the next `shorten` (one script per namespace and at
 * most SHORTEN_CHUNK hashes, whatever the load).
 */
export class CommittedOutcomes {
  private readonly due = new Map<string, string[]>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly ttlMs: number,
  ) {}

  /** Notes the outcome hash of a committed round whose calls `callIndexes` were enqueued, in `namespace`. */
  add(namespace: string, round: string, callIndexes: readonly number[]): void {
    if (callIndexes.length === 0) return;
    getOrCreate(this.due, namespace, () => []).push(this.keys.outcomes(namespace, round));
  }

  /** Shortens every key noted so far. */
  async shorten(): Promise<void> {
    if (this.due.size === 0) return;
    const due = [...this.due.values()];
    this.due.clear();
    for (const keys of due) {
      for (let i = 0; i < keys.length; i += SHORTEN_CHUNK) {
        await runScript(this.redis, shortenOutcomesScript, keys.slice(i, i + SHORTEN_CHUNK), [this.ttlMs]);
      }
    }
  }
}
