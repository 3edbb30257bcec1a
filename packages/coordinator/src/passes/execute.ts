import {
  type Artifact,
  assertNever,
  type CallResult,
  type ExecJob,
  type ExecOutcome,
  type ExecuteOptions,
  type Executor,
  FAILURES,
  idempotencyKeyOf,
} from '@tool-dispatch/shared';
import {
  type LimitRelease,
  type LimitStage,
  type Limits,
  type LimitWait,
  runStages,
  runTicketOf,
} from '../limits/limits.js';
import type { PlannedCall, RoundContext, RoundHooks } from '../model.js';
import { followerResult } from '../rules/follower-result.js';
import { deadlineMsOf, jobOf } from '../rules/job-of.js';
import { describeLimit, type NamedLimits, namedStages, retryAfterOf } from '../rules/named-limits.js';
import { parkKindOf } from '../rules/park.js';
import { planSteps } from '../rules/plan.js';
import { roundCuts } from '../rules/result-budget.js';
import { askDuringCall, type ParkDeps, parkCall } from './park.js';

export interface ExecuteInput {
  /** Calls that passed pass 1 and the gate, in call order. */
  calls: readonly PlannedCall[];
  executor: Executor;
  limits: Limits;
  /** The name of a call's places (its round and index), the same for a coordinator taking the round over. */
  ticketOf?: (call: PlannedCall) => string;
  /** The run's stages for a call (`runStages`). */
  stagesOf: (place: 'concurrent' | 'serial') => ReturnType<typeof runStages>;
  /** A call's TD_LIMITS stages (`namedStages`), taken once it holds its run's; none without TD_LIMITS. */
  namedOf?: (call: PlannedCall) => LimitStage[];
  /** How long a call waits for its TD_LIMITS stages (maxWaitMs, its deadline if sooner) before it ends rate_limited. */
  maxWaitOf?: (call: PlannedCall) => number;
  /** Hears of a call that ended rate_limited (metrics). */
  limitRejected?: RoundHooks['limitRejected'];
  /** Hears of a call starting (+1) and ending (-1) its wait for its TD_LIMITS places (metrics). */
  limitWaiting?: RoundHooks['limitWaiting'];
  signal: AbortSignal;
  jobOf(call: PlannedCall): ExecJob;
  /** Called as each call starts and ends (tracing, metrics). */
  observe?: (call: PlannedCall, job: ExecJob, run: () => Promise<ExecOutcome>) => Promise<ExecOutcome>;
  /** Hears of each wait a call had before it could start (tracing). */
  waited?: RoundHooks['waited'];
  /** Hears of each call the coordinator answered itself (find_tools, the history tools), as it takes its place. */
  answered?: (call: PlannedCall, result: CallResult) => void;
  /** Parks a call someone other than a worker answers (`parkKindOf`), holding its place of the run's limit meanwhile. */
  park?: (call: PlannedCall) => Promise<CallResult> | undefined;
  /** Gives a call that may ask a person something while it runs (an MCP tool's elicitation) its asker. */
  options?: (call: PlannedCall) => ExecuteOptions | undefined;
  /** Collects the artifacts workers wrote for outputs they did not replace (a round budget may cut them), by call index. */
  artifacts?: Map<number, Artifact>;
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
  const release = await admit(call, input, input.stagesOf(place), input.signal, '');
  if (!release) return cancelled(call);
  try {
    if (input.signal.aborted) return cancelled(call);
    // Then its TD_LIMITS stages, holding its run's place (so it never holds a tool's place while waiting for its run).
    const named = input.namedOf?.(call) ?? [];
    if (named.length > 0)
      return await runNamed(call, input, named, (r) => withRelease(r, () => runAdmitted(call, input)));
    return await runAdmitted(call, input);
  } finally {
    release();
  }
}

/** The places of `stages`; undefined when `signal` aborted the wait (the store unreachable throws). */
async function admit(
  call: PlannedCall,
  input: ExecuteInput,
  stages: readonly LimitStage[],
  signal: AbortSignal,
  ticketSuffix: string,
): Promise<LimitRelease | undefined> {
  const named = input.ticketOf?.(call);
  const ticket = named === undefined ? undefined : named + ticketSuffix;
  // Free places are taken at once where the limits can tell (memory), or where the round's begin took them (Redis).
  const now = input.limits.tryAcquire(stages, ticket);
  if (now) return now;
  try {
    const onWait = input.waited ? (wait: LimitWait) => input.waited?.(call, wait) : undefined;
    return await input.limits.acquire(stages, signal, onWait, ticket);
  } catch (e) {
    // A wait ends early only when it is aborted; anything else (the store unreachable) fails the round.
    if (signal.aborted) return undefined;
    throw e;
  }
}

/**
 * A call's TD_LIMITS stages (API.md "Limits that queue"): it waits its turn in arrival order up to
 * maxWaitMs (or its deadline), then ends rate_limited, never having run.
 */
async function runNamed(
  call: PlannedCall,
  input: ExecuteInput,
  named: readonly LimitStage[],
  run: (release: LimitRelease) => Promise<CallResult>,
): Promise<CallResult> {
  const waitMs = input.maxWaitOf?.(call) ?? 0;
  const patience = new AbortController();
  const timer = setTimeout(() => patience.abort(new Error('maxWaitMs')), waitMs);
  const startMs = Date.now();
  // Which of several stages holds it up is the limits' business; the gauge and the message name them all.
  const name = named.map((s) => s.name).join(', ');
  input.limitWaiting?.(name, 1);
  let release: LimitRelease | undefined;
  try {
    release = await admit(call, input, named, AbortSignal.any([input.signal, patience.signal]), ':limits');
  } finally {
    clearTimeout(timer);
    input.limitWaiting?.(name, -1);
  }
  if (release) return await run(release);
  if (input.signal.aborted) return cancelled(call);
  input.limitRejected?.(call, name);
  const what = named.map((s) => `${s.name}: ${describeLimit(s)}`).join('; ');
  const waitedMs = Date.now() - startMs;
  // When its limits may let it start: read now, an estimate from what they hold (retryAfterOf).
  const now = await input.limits.peek(named).catch(() => []);
  return rateLimited(call, { limit: name, what, waitedMs, retryAfterMs: retryAfterOf(named, now, waitedMs) });
}

async function withRelease(release: LimitRelease, fn: () => Promise<CallResult>): Promise<CallResult> {
  try {
    return await fn();
  } finally {
    release();
  }
}

interface OverLimit {
  /** The limits' names; `what`: each with its terms. */
  limit: string;
  what: string;
  waitedMs: number;
  retryAfterMs: number;
}

/** `0.4`, `2.5`, `37`: tenths of a second under 10 s, whole seconds after. */
const aboutSeconds = (ms: number) =>
  ms < 10_000 ? String(Math.max(0.1, Math.round(ms / 100) / 10)) : String(Math.round(ms / 1000));

function rateLimited(call: PlannedCall, { limit, what, waitedMs, retryAfterMs }: OverLimit): CallResult {
  const { status, code } = FAILURES.over_limit;
  const message =
    `This call did not run: ${call.name} is over its limit (${what}) and waited ` +
    `${waitedMs} ms for its turn. Try it again in about ${aboutSeconds(retryAfterMs)} s, or make fewer such calls at once.`;
  return {
    id: call.call.id,
    name: call.name,
    status,
    error: { code, message, details: { limit, retryAfterMs } },
    durationMs: 0,
  };
}

/** A call holding every place it needs: answered by the coordinator, parked, or run by the executor. */
async function runAdmitted(call: PlannedCall, input: ExecuteInput): Promise<CallResult> {
  if (input.signal.aborted) return cancelled(call);
  if (call.decision.kind === 'run' && call.decision.output !== undefined) {
    const result: CallResult = {
      id: call.call.id,
      name: call.name,
      status: 'ok',
      output: call.decision.output,
      durationMs: 0,
      ranOn: 'coordinator',
    };
    input.answered?.(call, result);
    return result;
  }
  const parked = input.park?.(call);
  if (parked) return await parked;
  const job = input.jobOf(call);
  const options = input.options?.(call);
  const run = () => input.executor.execute(job, input.signal, options);
  const outcome = input.observe ? await input.observe(call, job, run) : await run();
  if (outcome.status === 'ok' && outcome.artifact) input.artifacts?.set(call.call.index, outcome.artifact);
  return { ...toResult(call, outcome), idempotencyKey: keyOf(job) };
}

/** The key the call's side effects carry: the one a call sets in its own Idempotency-Key header, else ours. */
function keyOf(job: ExecJob): string {
  if (job.name === 'http_request') {
    const headers = job.args.headers;
    if (typeof headers === 'object' && headers !== null)
      for (const [k, v] of Object.entries(headers))
        if (k.toLowerCase() === 'idempotency-key' && typeof v === 'string') return v;
  }
  return idempotencyKeyOf(job);
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
  /** Where a run's places and serial lane are counted (shared by every coordinator in distributed mode). */
  limits: Limits;
  /** MAX_CONCURRENT_TOOLS: a run's places. */
  maxConcurrentTools: number;
  /** TD_LIMITS: limits per tool, MCP server and tenant, taken after a call's run places. */
  namedLimits?: NamedLimits | undefined;
  hooks?: Pick<RoundHooks, 'execute' | 'inputs' | 'waited' | 'answered' | 'limitRejected' | 'limitWaiting'> | undefined;
}

function namedInput(
  limits: NamedLimits,
  ctx: RoundContext,
  hooks: Pick<RoundHooks, 'limitRejected' | 'limitWaiting'> | undefined,
): Pick<ExecuteInput, 'namedOf' | 'maxWaitOf' | 'limitRejected' | 'limitWaiting'> {
  return {
    namedOf: (p) => namedStages(limits, { tool: p.name, server: p.spec?.server, tenant: ctx.session.tenant }),
    maxWaitOf: (p) => Math.min(limits.maxWaitMs, deadlineMsOf(p)),
    ...(hooks?.limitRejected ? { limitRejected: hooks.limitRejected.bind(hooks) } : {}),
    ...(hooks?.limitWaiting ? { limitWaiting: hooks.limitWaiting.bind(hooks) } : {}),
  };
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
  const artifacts = new Map<number, Artifact>();
  const toRun = planned.filter((p) => p.decision.kind === 'run');
  const ran = await executeCalls({
    artifacts,
    calls: toRun,
    executor: deps.executor,
    limits: deps.limits,
    stagesOf: (place) => runStages(ctx.ref, place, deps.maxConcurrentTools),
    ...(deps.namedLimits ? namedInput(deps.namedLimits, ctx, deps.hooks) : {}),
    ticketOf: (p) => runTicketOf(ctx.ref.round, p.call.index),
    signal: ctx.signal,
    jobOf: (p) => jobOf(p, ctx, toRun.length),
    park: function parkIfAnsweredElsewhere(p) {
      const kind = parkKindOf(p.spec);
      return kind ? parkCall(deps, ctx, p, kind) : undefined;
    },
    options: function askerIfItMayAsk(p) {
      return p.spec?.kind === 'mcp' ? { requestInput: askDuringCall(deps, ctx, p) } : undefined;
    },
    ...(deps.hooks?.execute ? { observe: deps.hooks.execute } : {}),
    ...(deps.hooks?.waited ? { waited: deps.hooks.waited.bind(deps.hooks) } : {}),
    ...(deps.hooks?.answered ? { answered: (p, r) => deps.hooks?.answered?.(p, ctx.ref, r) } : {}),
  });
  // Before followers copy their leaders: a repeat gets what its leader's model got.
  const budget = ctx.session.resultBudget;
  if (budget?.round !== undefined) for (const [i, r] of roundCuts(ran, artifacts, budget)) ran.set(i, r);
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
