import type { CallResult } from '@tool-dispatch/shared';
import type { PlannedCall, RoundContext, RoundHooks, RoundRef, RoundResponse, StoredPlanned } from '../model.js';
import { type CommitDeps, commitPass, publishCommitted } from '../passes/commit.js';
import { type ExecuteDeps, executePass } from '../passes/execute.js';
import { confirmGate, type GateDeps } from '../passes/gate.js';
import { type PreflightDeps, preflightPass, type ReadAhead } from '../passes/preflight.js';
import { sessionSpecs } from '../rules/catalog.js';
import { fetchedByFindTools } from '../rules/find-tools.js';
import { restoreCall } from '../rules/normalize-call.js';
import { parkKindOf } from '../rules/park.js';
import { roundStartedData } from '../rules/round-started.js';
import { restorePlanned, storedOf } from '../rules/stored-planned.js';
import { awaitRound } from './await-round.js';

/** Everything a round's passes read and write. */
export interface RoundDeps extends PreflightDeps, GateDeps, ExecuteDeps, CommitDeps {
  hooks?: RoundHooks | undefined;
}

/** Where a round taken over from another coordinator starts again. */
export interface Resume {
  /** Pass 1's decisions, kept when a person answered the round's confirmations. */
  planned?: StoredPlanned[];
  /** The coordinator that began the round (its calls' outcomes are under its name). */
  origin: string;
}

/** How a round starts: its calls as submitted, and either what was read ahead of pass 1 (a new round) or where to resume. */
export interface RoundStart {
  rawCalls: unknown[];
  read?: ReadAhead;
  resume?: Resume;
  /** Cancels this round only (its calls end `cancelled`), beside the run's signal. */
  cancel?: AbortSignal;
}

/** One round through the three passes (DESIGN.md), inside the `round` hook (its span) when there is one. */
export function runRound(deps: RoundDeps, ctx: RoundContext, start: RoundStart): Promise<RoundResponse> {
  const body = () => roundBody(deps, ctx, start);
  return deps.hooks?.round ? deps.hooks.round({ ...ctx.ref, calls: start.rawCalls.length }, body) : body();
}

/**
 * Pass 1 and the gate (unless a taken-over round kept their decisions), pass 2, pass 3; then,
 * once the round's answer is stored, what follows the commit: the executor told which calls
 * were committed, each result to the hooks, the round's events.
 */
async function roundBody(deps: RoundDeps, ctx: RoundContext, start: RoundStart): Promise<RoundResponse> {
  const kept = start.resume?.planned;
  const planned = kept
    ? restorePlanned(kept, sessionSpecs(deps.catalog, ctx.session.clientTools))
    : await planRound(deps, ctx, start);
  const results = withApprovals(planned, await executePass(deps, ctx, planned));
  const events = await inPass(deps.hooks, 'commit', ctx.ref, () => commitPass(deps, ctx, planned, results));
  // Another coordinator took the round over (this one was thought dead): its answer stands.
  if (!events) return awaitRound(deps.store, ctx.ref);
  // find_tools fetches once its answer is committed as the round's result.
  const found = fetchedByFindTools(planned, results);
  if (found.length > 0) await deps.store.markFetched(ctx.ref.session, found);
  const ran = planned.filter((p) => p.decision.kind === 'run' && !parkKindOf(p.spec)).map((p) => p.call.index);
  if (ran.length > 0) deps.executor.committed?.(ctx.ref.round, ran, ctx.origin);
  const onResult = deps.hooks?.result;
  if (onResult) for (const [i, r] of results.entries()) onResult(r, planned[i] as PlannedCall, ctx.ref);
  await publishCommitted(deps, ctx, events);
  return { round: ctx.ref.round, results };
}

/** v1.2: every call that passed the confirm gate says who let it through, in its result, history and event. */
function withApprovals(planned: readonly PlannedCall[], results: CallResult[]): CallResult[] {
  return results.map((r, i) => {
    const d = planned[i]?.decision;
    return d?.kind === 'run' && d.approval ? { ...r, approval: d.approval } : r;
  });
}

/** Pass 1, then the confirm gate; a person's answers are kept, so a coordinator taking the round over does not ask again. */
async function planRound(deps: RoundDeps, ctx: RoundContext, start: RoundStart): Promise<PlannedCall[]> {
  const { ref } = ctx;
  const calls = start.read?.calls ?? start.rawCalls.map(restoreCall);
  // round.started goes out while pass 1 reads (it only has to come before the round's other
  // events), unless the store appended it when the round began.
  const started =
    start.resume || deps.store.appendsEvents
      ? undefined
      : deps.events.publish(ref.session, 'round.started', roundStartedData(ref, calls));
  const pass1 = inPass(deps.hooks, 'preflight', ref, () => preflightPass(deps, ctx, calls, start.read));
  const [, planned] = await Promise.all([started, pass1]);
  const asked = await confirmGate(deps, ctx, planned);
  // Kept when a person answered, or calls will be parked: a takeover then parks the same calls
  // (same inputIds) and finds the answers posted meanwhile, whatever pass 1 would decide again.
  const parks = planned.some((p) => p.decision.kind === 'run' && parkKindOf(p.spec));
  if ((asked || parks) && ctx.owner)
    await deps.store.saveDecisions(ref.session, ref.run, ref.round, ctx.owner, planned.map(storedOf));
  return planned;
}

function inPass<T>(
  hooks: RoundHooks | undefined,
  name: 'preflight' | 'commit',
  ref: RoundRef,
  fn: () => Promise<T>,
): Promise<T> {
  return hooks?.pass ? hooks.pass(name, ref, fn) : fn();
}
