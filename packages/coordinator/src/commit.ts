import { type CallResult, RESULT_CACHE_TTL_MS } from '@tool-dispatch/shared';
import { invalidationsOf } from './dedupe.js';
import type { EventBus, EventName } from './events.js';
import type { PlannedCall } from './preflight.js';
import type { CommitItem, Store } from './store/store.js';

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

/** What pass 3 writes for one call (DESIGN.md): its history entry, and for `ok`, dedupe, cache and invalidations. */
function commitItemOf(
  p: PlannedCall,
  result: CallResult,
  at: { callIndex: number; round: string; run: string; now: number },
): CommitItem {
  const { round } = at;
  const item: CommitItem = {
    callIndex: at.callIndex,
    entry: { ...result, round, run: at.run, at: new Date(at.now).toISOString() },
  };
  if (result.status !== 'ok') return item;
  if (p.dedupable) {
    const entry = { key: p.key, tool: p.name, callId: result.id, round, output: result.output };
    item.dedupe = p.paths ? { ...entry, paths: p.paths } : entry;
  }
  if (p.cacheable) {
    item.cache = {
      key: p.key,
      value: { output: result.output, callId: result.id, round, storedAt: at.now },
      ttlMs: RESULT_CACHE_TTL_MS,
    };
  }
  const created = (result.output as { created?: unknown } | undefined)?.created;
  const invalidations = invalidationsOf(p.name, p.args, typeof created === 'boolean' ? created : undefined);
  if (invalidations.length > 0) item.invalidations = invalidations;
  return item;
}

/** An event to publish on the session's stream. */
export interface PendingEvent {
  name: EventName;
  data: Record<string, unknown>;
}

/**
 * Pass 3's writes (DESIGN.md), in call order: history, dedupe map (with edit/command
 * invalidation), result cache; the store applies the whole round at once. Returns the
 * `tool.result` events of the calls recorded now, for the caller to publish. Idempotent: a
 * call committed before is skipped and yields no event.
 */
export async function storeRound(input: Omit<CommitInput, 'events'>): Promise<PendingEvent[]> {
  const { session, run, round } = input;
  const now = (input.now ?? Date.now)();
  const items: CommitItem[] = [];
  const committed: CallResult[] = [];
  for (const [i, result] of input.results.entries()) {
    const p = input.planned[i];
    if (!p) continue;
    items.push(commitItemOf(p, result, { callIndex: i, round, run, now }));
    committed.push(result);
  }
  const recorded = await input.store.commitResults({ session, tenant: input.tenant, run, items });
  return committed
    .filter((_, i) => recorded[i])
    .map((result) => ({ name: 'tool.result' as const, data: { round, run, ...result } }));
}

/** Pass 3 (DESIGN.md): `storeRound`, then its `tool.result` events. */
export async function commitRound(input: CommitInput): Promise<void> {
  await input.events.publishMany(input.session, await storeRound(input));
}
