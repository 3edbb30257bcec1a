import { type CallResult, RESULT_CACHE_TTL_MS } from '@tool-dispatch/shared';
import { invalidationsOf } from './dedupe.js';
import type { EventBus } from './events.js';
import type { PlannedCall } from './preflight.js';
import type { Store } from './store/store.js';

export interface CommitInput {
  store: Store;
  events: EventBus;
  session: string;
  tenant: string;
  run: string;
  round: string;
  planned: readonly PlannedCall[];
  results: readonly CallResult[];
  now?: () => number;
}

/**
 * Pass 3 (DESIGN.md), serial in call order: history, dedupe map (with edit/command invalidation),
 * result cache, `tool.result` events. Idempotent: a call committed before is skipped.
 */
export async function commitRound(input: CommitInput): Promise<void> {
  const { store, session, run, round } = input;
  const now = input.now ?? Date.now;
  for (const [i, result] of input.results.entries()) {
    const p = input.planned[i];
    if (!p) continue;
    const recorded = await store.recordResult(session, i, { ...result, round, run, at: new Date(now()).toISOString() });
    if (!recorded) continue; // DESIGN.md pass 3: commit is idempotent
    if (result.status === 'ok') {
      if (p.dedupable) {
        const entry = { key: p.key, tool: p.name, callId: result.id, round, output: result.output };
        await store.putDedupe(session, run, p.paths ? { ...entry, paths: p.paths } : entry);
      }
      if (p.cacheable) {
        await store.putCached(
          input.tenant,
          p.key,
          { output: result.output, callId: result.id, round, storedAt: now() },
          RESULT_CACHE_TTL_MS,
        );
      }
      const created = (result.output as { created?: unknown } | undefined)?.created;
      for (const inv of invalidationsOf(p.name, p.args, typeof created === 'boolean' ? created : undefined)) {
        await store.dropDedupe(session, run, inv);
      }
    }
    await input.events.publish(session, 'tool.result', { round, run, ...result });
  }
}
