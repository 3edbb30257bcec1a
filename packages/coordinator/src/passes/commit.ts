import { type CallResult, RESULT_CACHE_TTL_MS } from '@tool-dispatch/shared';
import type { EventBus, EventName } from '../events/event-bus.js';
import type { Limits } from '../limits/limits.js';
import type { DedupeInvalidation, PlannedCall, RoundContext } from '../model.js';
import { toolResultData } from '../model.js';
import { covers, invalidationsOf, pathsNamed } from '../rules/dedupe.js';
import { isListedError } from '../rules/history-query.js';
import type { CommitItem, Store } from '../store/store.js';
import { realWorkspacePath } from '../support/workspace-paths.js';

export interface CommitInput {
  store: Store;
  events: EventBus;
  session: string;
  tenant: string;
  run: string;
  round: string;
  planned: readonly PlannedCall[];
  results: readonly CallResult[];
  /** The coordinator committing: fenced (nothing written) when another owns the round. */
  owner?: string | undefined;
  /** The `round.completed` data, for a store that appends the round's events itself. */
  completed?: Record<string, unknown>;
  now?: () => number;
  /** The path a workspace path reaches through symlinks (`realWorkspacePath`), so a link and its target are one path. */
  resolvePath?: (path: string) => Promise<string | undefined>;
  /** (v1.3) The run's places the round's begin took, given back in the commit's step (`Limits.giveBackAtCommit`). */
  limits?: Pick<Limits, 'giveBackAtCommit' | 'roundEnded'> | undefined;
}

/** What pass 3 writes for one call (DESIGN.md): its history entry, and for `ok`, dedupe, cache and invalidations. */
function commitItemOf(
  p: PlannedCall,
  result: CallResult,
  at: { callIndex: number; round: string; run: string; now: number; iso: string },
): CommitItem {
  const { round } = at;
  const paths = pathsNamed(p.name, p.args);
  const entry = { ...result, round, run: at.run, at: at.iso, ...(paths ? { paths } : {}) };
  const item: CommitItem = { callIndex: at.callIndex, entry };
  if (result.status !== 'ok') {
    // A writer stopped part way (its deadline, its worker, a cancel) may have written: its reads go.
    if (mayHaveWritten(result)) {
      const invalidations = invalidationsOf(p.name, p.args, undefined);
      if (invalidations.length > 0) item.invalidations = invalidations;
    }
    return item;
  }
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

/** An error that may have come after the call's side effect started: stopped, not refused by the tool itself. */
function mayHaveWritten(result: CallResult): boolean {
  const code = result.error?.code;
  return result.status === 'error' && (code === 'timeout' || code === 'worker_lost' || code === 'cancelled');
}

/**
 * A writer that runs beside other calls (download_file is concurrent) may write before or after
 * the reads of its batch: their entries covering what it wrote are not kept, those committed
 * after it as well as before it (its invalidation, applied in call order, drops the earlier
 * ones). A serial call ends the batch: what runs after it read after every earlier write.
 */
function dropReadsBesideWriters(
  items: CommitItem[],
  planned: readonly (PlannedCall | undefined)[],
  results: readonly CallResult[],
): void {
  let beside: DedupeInvalidation[] = [];
  for (const item of items) {
    const p = planned[item.callIndex];
    const result = results[item.callIndex];
    if (!p || !result || p.decision.kind !== 'run' || (result.status !== 'ok' && result.status !== 'error')) continue;
    if (p.spec?.concurrency !== 'concurrent') {
      beside = [];
      continue;
    }
    const dedupe = item.dedupe;
    if (dedupe && beside.some((inv) => covers(inv, dedupe.tool, dedupe.paths))) delete item.dedupe;
    if (item.invalidations) beside = beside.concat(item.invalidations);
  }
}

/**
 * A round with a result error_history lists makes the run's error_history answers stale, this
 * round's too (they were read before it committed): dropped once, after the round's last item
 * (not once per failure: dropping every entry of a tool looks at all the run's entries).
 */
function staleErrorHistories(items: CommitItem[]): void {
  const last = items.at(-1);
  if (last && items.some((item) => isListedError(item.entry.status)))
    last.invalidations = [...(last.invalidations ?? []), { tool: 'error_history' }];
}

/**
 * DESIGN.md pass 3: paths compared after resolving symlinks inside the workspace. Each read's
 * entry and each write's invalidation name the paths as spelled and the paths they reach, so an
 * edit through a link drops the reads of its target, and an edit of a target the reads through a link.
 */
async function addLinkedPaths(
  items: CommitItem[],
  resolvePath: (path: string) => Promise<string | undefined>,
): Promise<void> {
  const spelled = new Set<string>();
  for (const item of items) {
    for (const p of item.dedupe?.paths ?? []) spelled.add(p);
    for (const inv of item.invalidations ?? []) for (const p of inv.paths ?? []) spelled.add(p);
  }
  if (spelled.size === 0) return;
  const reached = new Map<string, string>();
  await Promise.all(
    [...spelled].map(async function resolveOne(p) {
      const real = await resolvePath(p);
      if (real !== undefined && real !== p) reached.set(p, real);
    }),
  );
  if (reached.size === 0) return;
  const withReached = (paths: readonly string[]) => [
    ...new Set(paths.flatMap((p) => (reached.has(p) ? [p, reached.get(p) as string] : [p]))),
  ];
  for (const item of items) {
    if (item.dedupe?.paths) item.dedupe.paths = withReached(item.dedupe.paths);
    if (item.invalidations)
      item.invalidations = item.invalidations.map((inv) =>
        inv.paths ? { ...inv, paths: withReached(inv.paths) } : inv,
      );
  }
}

/** An event to publish on the session's stream. */
export interface PendingEvent {
  name: EventName;
  data: Record<string, unknown>;
}

/**
 * Pass 3's writes (DESIGN.md), in call order: history, dedupe map (with edit/command
 * invalidation), result cache, and the round's answer; the store applies the whole round at
 * once. Returns the round's `tool.result` events, for the caller to publish (a store that
 * `appendsEvents` has appended them, and round.completed, when given `completed`), or null when
 * the round was fenced: done already (commit is idempotent) or owned by another coordinator.
 */
export async function storeRound(input: Omit<CommitInput, 'events'>): Promise<PendingEvent[] | null> {
  const { session, run, round } = input;
  const now = (input.now ?? Date.now)();
  const iso = new Date(now).toISOString();
  const items: CommitItem[] = [];
  for (const [i, result] of input.results.entries()) {
    const p = input.planned[i];
    if (p) items.push(commitItemOf(p, result, { callIndex: i, round, run, now, iso }));
  }
  if (input.resolvePath) await addLinkedPaths(items, input.resolvePath);
  dropReadsBesideWriters(items, input.planned, input.results);
  staleErrorHistories(items);
  const giveBack = input.limits?.giveBackAtCommit?.(round);
  const outcome = await input.store.commitRound({
    session,
    tenant: input.tenant,
    run,
    round,
    items,
    ...(input.owner ? { owner: input.owner } : {}),
    ...(input.completed ? { completed: input.completed } : {}),
    ...(giveBack ? { giveBack } : {}),
  });
  if (outcome.fenced) return null;
  // Given back with the commit (a store that did not take them gave nothing back: they go now).
  if (giveBack)
    input.limits?.roundEnded?.(round, outcome.waiters === undefined ? undefined : { waiters: outcome.waiters });
  return items.map((item) => ({
    name: 'tool.result' as const,
    data: toolResultData(input, input.results[item.callIndex] as CallResult),
  }));
}

/** Pass 3 (DESIGN.md): `storeRound`, then its `tool.result` events. */
export async function commitRound(input: CommitInput): Promise<void> {
  await input.events.publishMany(input.session, (await storeRound(input)) ?? []);
}

/** What pass 3 writes to. */
export interface CommitDeps {
  store: Store;
  events: EventBus;
}

/**
 * Pass 3 for a whole round (`storeRound`, with the round's `round.completed` for a store that
 * appends the round's events itself). The round's `tool.result` events, or null when the round
 * was fenced: done already, or taken over by another coordinator.
 */
export function commitPass(
  deps: Pick<CommitDeps, 'store'> & { limits?: Limits },
  ctx: RoundContext,
  planned: readonly PlannedCall[],
  results: readonly CallResult[],
): Promise<PendingEvent[] | null> {
  const { session, run, round } = ctx.ref;
  return storeRound({
    store: deps.store,
    session,
    tenant: ctx.session.tenant,
    run,
    round,
    planned,
    results,
    owner: ctx.owner,
    ...(deps.store.appendsEvents ? { completed: { round, run } } : {}),
    resolvePath: (p) => realWorkspacePath(ctx.session.workspace, p),
    limits: deps.limits,
  });
}

/**
 * After the commit (and the round's answer) is stored: its `tool.result` events in commit order,
 * then `round.completed`, unless the store appended them with the commit.
 */
export async function publishCommitted(
  deps: CommitDeps,
  ctx: RoundContext,
  events: readonly PendingEvent[],
): Promise<void> {
  if (deps.store.appendsEvents) return;
  const { session, run, round } = ctx.ref;
  await deps.events.publishMany(session, [...events, { name: 'round.completed', data: { round, run } }]);
}
