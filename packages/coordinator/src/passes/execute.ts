import {
  assertNever,
  type CallResult,
  type ExecJob,
  type ExecOutcome,
  type ExecuteOptions,
  type Executor,
  FAILURES,
} from '@tool-dispatch/shared';
import type { PlannedCall, RoundContext, RoundHooks } from '../model.js';
import { runKeyOf } from '../model.js';
import { followerResult } from '../rules/follower-result.js';
import { jobOf } from '../rules/job-of.js';
import { parkKindOf } from '../rules/park.js';
import { planSteps } from '../rules/plan.js';
import type { RunLimiter, RunWait } from '../support/run-limiter.js';
import { askDuringCall, type ParkDeps, parkCall } from './park.js';

export interface ExecuteInput {
  /** Calls that passed pass 1 and the gate, in call order. */
  calls: readonly PlannedCall[];
  executor: Executor;
  limiter: RunLimiter;
  runKey: string;
  signal: AbortSignal;
  jobOf(call: PlannedCall): ExecJob;
  /** Called as each call starts and ends (tracing, metrics). */
  observe?: (call: PlannedCall, job: ExecJob, run: () => Promise<ExecOutcome>) => Promise<ExecOutcome>;
  /** Hears of each wait a call had before it could start (tracing). */
  waited?: RoundHooks['waited'];
  /** Parks a call someone other than a worker answers (`parkKindOf`), holding its place in the limiter meanwhile. */
  park?: (call: PlannedCall) => Promise<CallResult> | undefined;
  /** Gives a call that may ask a person something while it runs (an MCP tool's elicitation) its asker. */
  options?: (call: PlannedCall) => ExecuteOptions | undefined;
}

const cancelled = (call: PlannedCall): CallResult => {
  const { status, code } = FAILURES.run_cancelled;
  const message = 'The run was cancelled before this call started; it did not run.';
  return { id: call.call.id, name: call.name, status, error: { code, message }, durationMs: 0 };
};

/**
 * Pass 2 (DESIGN.md): consecutive concurrent calls run as a batch, at most the run's limit in
 * flight; a serial call runs alone. A failure never cancels its siblings. Results by call index.
 */
export async function executeCalls(input: ExecuteInput): Promise<Map<number, CallResult>> {
  const results = new Map<number, CallResult>();
  const isConcurrent = (c: PlannedCall) => c.spec?.concurrency === 'concurrent';
  const passStartMs = Date.now();
  let first = true;
  for (const step of planSteps(input.calls, isConcurrent)) {
    const group = step.kind === 'batch' ? step.calls : [step.call];
    // DESIGN.md pass 2: each step waited for the ones before it (a serial call runs alone).
    if (!first)
      for (const call of group)
        input.waited?.(call, { reason: 'serial_barrier', startMs: passStartMs, endMs: Date.now() });
    first = false;
    await Promise.all(
      group.map(async function runOneCall(call) {
        results.set(call.call.index, await runOne(call, input));
      }),
    );
  }
  return results;
}

async function runOne(call: PlannedCall, input: ExecuteInput): Promise<CallResult> {
  if (input.signal.aborted) return cancelled(call);
  const place = call.spec?.concurrency === 'concurrent' ? 'concurrent' : 'serial';
  // Free places are taken at once (most calls); the rest wait their turn in order.
  let release = input.limiter.tryAcquire(input.runKey, place);
  if (!release) {
    try {
      const onWait = input.waited ? (wait: RunWait) => input.waited?.(call, wait) : undefined;
      release = await input.limiter.acquire(input.runKey, input.signal, place, onWait);
    } catch {
      return cancelled(call);
    }
  }
  try {
    if (input.signal.aborted) return cancelled(call);
    if (call.decision.kind === 'run' && call.decision.output !== undefined) {
      return {
        id: call.call.id,
        name: call.name,
        status: 'ok',
        output: call.decision.output,
        durationMs: 0,
        ranOn: 'coordinator',
      };
    }
    const parked = input.park?.(call);
    if (parked) return await parked;
    const job = input.jobOf(call);
    const options = input.options?.(call);
    const run = () => input.executor.execute(job, input.signal, options);
    const outcome = input.observe ? await input.observe(call, job, run) : await run();
    return toResult(call, outcome);
  } finally {
    release();
  }
}

function toResult(call: PlannedCall, o: ExecOutcome): CallResult {
  const id = call.call.id;
  const durationMs = Math.round(o.durationMs);
  if (o.status === 'ok') return { id, name: call.name, status: 'ok', output: o.output, durationMs, ranOn: o.ranOn };
  const error =
    o.details === undefined
      ? { code: o.code, message: o.message }
      : { code: o.code, message: o.message, details: o.details };
  return o.ranOn === undefined
    ? { id, name: call.name, status: 'error', error, durationMs }
    : { id, name: call.name, status: 'error', error, durationMs, ranOn: o.ranOn };
}

/** What pass 2 needs of the coordinator. */
export interface ExecuteDeps extends ParkDeps {
  executor: Executor;
  limiter: RunLimiter;
  hooks?: Pick<RoundHooks, 'execute' | 'inputs' | 'waited'> | undefined;
}

/**
 * Pass 2 for a whole round: runs the calls pass 1 and the gate let through (`executeCalls`),
 * parking those a person or the client answers (`parkCall`; they never reach the executor), and
 * gives every call its result in call order: the one pass 1 decided, the one it ran to, or,
 * for a repeat of an earlier call of the round, its leader's (`followerResult`).
 */
export async function executePass(
  deps: ExecuteDeps,
  ctx: RoundContext,
  planned: readonly PlannedCall[],
): Promise<CallResult[]> {
  const ran = await executeCalls({
    calls: planned.filter((p) => p.decision.kind === 'run'),
    executor: deps.executor,
    limiter: deps.limiter,
    runKey: runKeyOf(ctx.ref),
    signal: ctx.signal,
    jobOf: (p) => jobOf(p, ctx),
    park: function parkIfAnsweredElsewhere(p) {
      const kind = parkKindOf(p.spec);
      return kind ? parkCall(deps, ctx, p, kind) : undefined;
    },
    options: function askerIfItMayAsk(p) {
      return p.spec?.kind === 'mcp' ? { requestInput: askDuringCall(deps, ctx, p) } : undefined;
    },
    ...(deps.hooks?.execute ? { observe: deps.hooks.execute } : {}),
    ...(deps.hooks?.waited ? { waited: deps.hooks.waited.bind(deps.hooks) } : {}),
  });
  const results: CallResult[] = [];
  for (const p of planned) {
    const d = p.decision;
    switch (d.kind) {
      case 'done':
        results.push(d.result);
        break;
      case 'run':
        results.push(ran.get(p.call.index) as CallResult);
        break;
      case 'follow':
        results.push(followerResult(p, results[d.leader] as CallResult, ctx.ref.round));
        break;
      default:
        assertNever(d, 'call decision');
    }
  }
  return results;
}
