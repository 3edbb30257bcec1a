import { DEFAULT_TOOL_TIMEOUT_MS, type ExecJob, type JobBudget, standbyThreshold } from '@tool-dispatch/shared';
import type { PlannedCall, RoundContext } from '../model.js';

/** A call's deadline (API.md): run_command's own `timeoutMs` arg, else the tool's timeout, else 60 s. */
export function deadlineMsOf(p: PlannedCall): number {
  if (p.name === 'run_command' && typeof p.args.timeoutMs === 'number') return p.args.timeoutMs;
  return p.spec?.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
}

/**
 * The job pass 2 hands the executor for a call: where it runs (the concurrent queue only for a
 * tool tagged concurrent; everything else serial, DESIGN.md pass 2), its deadline, and the
 * session's result budget (`executed`: how many calls of the round run, which bounds what a round
 * budget can cut).
 */
export function jobOf(p: PlannedCall, ctx: RoundContext, executed = 1): ExecJob {
  const { ref, session } = ctx;
  return {
    session: ref.session,
    tenant: session.tenant,
    run: ref.run,
    round: ref.round,
    toolCallId: p.call.id,
    callIndex: p.call.index,
    name: p.name,
    args: p.args,
    workspace: session.workspace,
    queue: p.spec?.concurrency === 'concurrent' ? 'concurrent' : 'serial',
    timeoutMs: deadlineMsOf(p),
    ...(ctx.origin ? { origin: ctx.origin } : {}),
    ...(session.resultBudget ? { resultBudget: jobBudget(session.resultBudget, executed) } : {}),
  };
}

function jobBudget(budget: JobBudget, executed: number): JobBudget {
  return budget.round === undefined ? budget : { ...budget, standbyOver: standbyThreshold(budget.round, executed) };
}
