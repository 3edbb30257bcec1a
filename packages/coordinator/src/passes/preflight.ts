import type { CallResult, Executor, ToolSpec } from '@tool-dispatch/shared';
import type {
  DedupeEntry,
  KnownKey,
  NormalCall,
  PlannedCall,
  RoundContext,
  RoundHooks,
  SessionState,
} from '../model.js';
import { type Catalog, sessionSpecs } from '../rules/catalog.js';
import { answerHistoryCall, HISTORY_SCAN_LIMIT, historyPathProblem, isHistoryTool } from '../rules/history-query.js';
import { COORDINATOR_TOOLS, preflight } from '../rules/preflight.js';
import { fetchedSet, loadedSet, loadingOf } from '../rules/session-view.js';
import type { Store } from '../store/store.js';
import { getOrCreate } from '../support/maps.js';

/** What pass 1 reads and writes. */
export interface PreflightDeps {
  store: Store;
  catalog: Catalog;
  executor: Executor;
  hooks?: Pick<RoundHooks, 'findTools'> | undefined;
}

/** What a new round read before pass 1: its calls normalised, and the dedupe entries read with its begin. */
export interface ReadAhead {
  calls: NormalCall[];
  known: ReadonlyMap<NormalCall, KnownKey>;
  /** The keys read, and the entries found under them. */
  asked: ReadonlySet<string>;
  dedupe: ReadonlyMap<string, DedupeEntry>;
}

/** Tools the session may run: the executor's handlers and the coordinator's own, less the session's client tools (its client runs those). */
export async function runnableTools(
  executor: Pick<Executor, 'handlerNames'>,
  state: SessionState,
): Promise<ReadonlySet<string>> {
  const handlers = await executor.handlerNames();
  // Most sessions declare no client tools: their set is made once per set of handler names.
  if (state.clientTools.length === 0) return getOrCreate(runnableOfHandlers, handlers, () => withOwnTools(handlers));
  const names = withOwnTools(handlers);
  for (const t of state.clientTools) names.delete(t.name);
  return names;
}

/** Tools something can run in any session: the executor's handlers and the coordinator's own (`GET /v1/tools`). */
export async function runnableAnywhere(executor: Pick<Executor, 'handlerNames'>): Promise<ReadonlySet<string>> {
  const handlers = await executor.handlerNames();
  return getOrCreate(runnableOfHandlers, handlers, () => withOwnTools(handlers));
}

/** The tools runnable with these handlers and no client tools (executors answer the same set while it holds). */
const runnableOfHandlers = new WeakMap<ReadonlySet<string>, ReadonlySet<string>>();

const withOwnTools = (handlers: ReadonlySet<string>) => new Set([...handlers, ...COORDINATOR_TOOLS]);

/**
 * The tools pass 1 lets run. A resumed round (taken over, or this coordinator's own that failed
 * part way) may have run its calls already, their outcomes recorded under their ids: each tool with
 * a definition counts, so such a call gets its recorded outcome, never `unknown` because no worker
 * was announced just then (announcements lapse while Redis is away). A call no worker takes ends
 * in the queue at its deadline instead.
 */
async function runnableFor(
  executor: Pick<Executor, 'handlerNames'>,
  ctx: RoundContext,
  specs: ReadonlyMap<string, ToolSpec>,
): Promise<{ runnable: ReadonlySet<string>; noWorkers?: true }> {
  const runnable = await runnableTools(executor, ctx.session);
  if (ctx.origin === undefined) {
    if ((await executor.handlerNames()).size > 0) return { runnable };
    // No worker announced at all: the registry may be lost (a failover); wait for it a while.
    const back = await workersWithin(executor, WORKERS_PATIENCE_MS, ctx.signal);
    return back ? { runnable: await runnableTools(executor, ctx.session) } : { runnable, noWorkers: true };
  }
  const names = new Set(runnable);
  const client = new Set(ctx.session.clientTools.map((t) => t.name));
  for (const [name, spec] of specs) if (spec.kind !== 'client' && !client.has(name)) names.add(name);
  return { runnable: names };
}

/**
 * How long a round waits for any worker to be announced when none is (API.md v1.2 "Known tools
 * stay known"); then its worker calls end `error`/`unavailable`. Announcements are renewed every
 * 2 s, so a registry lost with a Redis primary is back within this.
 */
export const WORKERS_PATIENCE_MS = 6_000;

async function workersWithin(
  executor: Pick<Executor, 'handlerNames'>,
  ms: number,
  signal: AbortSignal,
): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end && !signal.aborted) {
    await new Promise((r) => setTimeout(r, 250));
    if ((await executor.handlerNames()).size > 0) return true;
  }
  return false;
}

/**
 * Pass 1 (DESIGN.md): reads the session's view of the catalog and the run's dedupe and cache
 * entries (those read with the round's begin are not read again), decides each call with the
 * rules, then stores the schemas it answered (`schema`; find_tools' wait for the commit).
 */
export async function preflightPass(
  deps: PreflightDeps,
  ctx: RoundContext,
  calls: readonly NormalCall[],
  read: ReadAhead | undefined,
): Promise<PlannedCall[]> {
  const state = ctx.session;
  const specs = sessionSpecs(deps.catalog, state.clientTools);
  const fetched = fetchedSet(state.provider, state.fetched, specs);
  const before = new Set(fetched);
  const foundByFindTools = new Set<string>();
  const planned = await preflight(calls, {
    provider: state.provider,
    loaded: loadedSet(loadingOf(state), specs, state.clientTools),
    fetched,
    foundByFindTools,
    specs,
    ...(await runnableFor(deps.executor, ctx, specs)),
    autoApprove: state.autoApprove,
    ...(read ? { knownKeys: read.known } : {}),
    findDedupe: async (keys) =>
      read && keys.every((k) => read.asked.has(k))
        ? read.dedupe
        : deps.store.findDedupeMany(state.id, ctx.ref.run, keys),
    findCached: (keys) => deps.store.findCachedMany(state.tenant, keys),
    ...(deps.hooks?.findTools ? { observeFindTools: deps.hooks.findTools.bind(deps.hooks) } : {}),
  });
  // Schemas pass 1 answered are fetched now; find_tools' only once its result is committed (round/run-round).
  const added = [...fetched].filter((n) => !before.has(n) && !foundByFindTools.has(n));
  await Promise.all([
    added.length > 0 ? deps.store.markFetched(state.id, added) : undefined,
    answerHistoryCalls(deps.store, state.id, planned),
  ]);
  return planned;
}

/**
 * file_history and error_history calls that pass 1 let through are answered here, from the
 * session's recorded results (one read for the round), like find_tools from the catalog: they
 * then take their place in pass 2 and are committed like any call.
 */
async function answerHistoryCalls(
  store: Pick<Store, 'history'>,
  session: string,
  planned: readonly PlannedCall[],
): Promise<void> {
  const asking = planned.filter((p) => p.decision.kind === 'run' && isHistoryTool(p.name));
  if (asking.length === 0) return;
  const entries = await store.history(session, undefined, HISTORY_SCAN_LIMIT);
  for (const p of asking) {
    if (!isHistoryTool(p.name)) continue;
    const problem = p.name === 'file_history' ? historyPathProblem(String(p.args.path)) : undefined;
    p.decision = problem
      ? { kind: 'done', result: failedResult(p, problem) }
      : { kind: 'run', needsConfirm: false, output: answerHistoryCall(p.name, entries, p.args) };
  }
}

/** A history call the tool itself refuses (a path outside the workspace): error/handler_error, as a worker's tool would. */
function failedResult(p: PlannedCall, message: string): CallResult {
  return { id: p.call.id, name: p.name, status: 'error', error: { code: 'handler_error', message }, durationMs: 0 };
}
