import { mkdir } from 'node:fs/promises';
import type {
  ExecFailureKind,
  ExecJob,
  ExecOutcome,
  Handler,
  HandlerConfig,
  HandlerContext,
  InputRequester,
} from '@tool-dispatch/shared';
import {
  callIdFor,
  DEFAULT_TOOL_TIMEOUT_MS,
  failedOutcome,
  failureKindOf,
  idempotencyKeyOf,
  isToolError,
  MAX_OUTPUT_BYTES,
  SETTLE_GRACE_MS,
} from '@tool-dispatch/shared';
import type { Attributes } from '@tool-dispatch/shared/tracing';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_QUEUE_CLASS,
  ATTR_WAIT_REASON,
  callAttributes,
  executeSpanName,
  extractContext,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  globalTracing,
  recordSpan,
  SPAN_QUEUE_WAIT,
  SpanKind,
  setSpanOutcome,
} from '@tool-dispatch/shared/tracing';
import type { HandlerRegistry } from './registry.js';
import { type DeadlineSignal, isDeadlineAbort, withDeadline } from './support/abort.js';
import { isFenced } from './support/fenced.js';
import { errorMessage } from './support/node-error.js';
import { applyResultBudget, type Budgeted } from './support/result-budget.js';

/** setTimeout's largest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

export interface RunJobOptions {
  /** Overrides SETTLE_GRACE_MS (tests). */
  settleGraceMs?: number;
  /** More attributes for the `execute <tool>` span (a queue consumer's messaging.* ones). */
  spanAttributes?: Attributes;
  /** When the call's job was enqueued: a `queue wait` span covers from then to the start (distributed mode). */
  queuedAtMs?: number;
  /**
   * The call's own controller, whose signal is `signal`: the deadline aborts it too (with a
   * `TimeoutError`), so no second controller is made per call.
   */
  controller?: AbortController;
  /** Parks the call's questions (HandlerContext.requestInput); the deadline is held while one waits. */
  requestInput?: InputRequester;
}

/** Workspaces this process already created: one mkdir per workspace, not per call (bounded). */
const madeWorkspaces = new Set<string>();
const MAX_REMEMBERED_WORKSPACES = 10_000;

async function makeWorkspace(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (madeWorkspaces.size >= MAX_REMEMBERED_WORKSPACES) madeWorkspaces.clear();
  madeWorkspaces.add(dir);
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs one call on this process: the one path embedded and BullMQ workers share. Never throws:
 * every failure is an outcome. `signal` is the caller's (run cancelled); the deadline is the
 * job's `timeoutMs`. A handler that ignores its signal is still reported when the deadline passes.
 */
export async function runJob(
  registry: HandlerRegistry,
  job: ExecJob,
  signal: AbortSignal,
  config: HandlerConfig,
  ranOn: string,
  options: RunJobOptions = {},
): Promise<ExecOutcome> {
  const tracing = globalTracing();
  const run = () => runUntraced(registry, job, signal, config, ranOn, options);
  if (!tracing) return run();
  // DESIGN.md observability: `execute <tool>` is a child of the round, across processes, through
  // the W3C context the coordinator put in the job.
  const spec = {
    name: executeSpanName(job.name),
    kind: SpanKind.CONSUMER,
    parent: extractContext(job.trace),
    attributes: {
      ...callAttributes({
        session: job.session,
        run: job.run,
        round: job.round,
        toolCallId: job.toolCallId,
        name: job.name,
      }),
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
      [ATTR_QUEUE_CLASS]: job.queue,
      [ATTR_MESSAGING_MESSAGE_ID]: callIdFor(job.round, job.callIndex),
      ...options.spanAttributes,
    },
  };
  if (options.queuedAtMs !== undefined) {
    recordSpan(tracing.tracer, {
      ...spec,
      name: SPAN_QUEUE_WAIT,
      kind: SpanKind.INTERNAL,
      attributes: { ...spec.attributes, [ATTR_WAIT_REASON]: 'queue' },
      startTimeMs: options.queuedAtMs,
      endTimeMs: Date.now(),
    });
  }
  return tracing.withSpan(spec, async function executeSpan(span) {
    const outcome = await run();
    // Asked after the call: an MCP tool's server is known once its first connection is made.
    const source = registry.spanAttributes(job.name);
    if (source) span.setAttributes(source);
    setSpanOutcome(span, outcome);
    return outcome;
  });
}

async function runUntraced(
  registry: HandlerRegistry,
  job: ExecJob,
  signal: AbortSignal,
  config: HandlerConfig,
  ranOn: string,
  options: RunJobOptions,
): Promise<ExecOutcome> {
  const started = performance.now();
  const fail: Fail = (kind, message, details) =>
    failedOutcome(kind, message, Math.round(performance.now() - started), { details, ranOn });

  const handler = registry.resolve(job.name);
  if (!handler) return fail('handler_threw', `no handler registered for ${job.name}`);
  if (signal.aborted) return fail('run_cancelled', 'the call was cancelled before it started');
  // Checked here, not in an async helper: a known workspace costs no promise.
  if (!madeWorkspaces.has(job.workspace)) {
    try {
      await makeWorkspace(job.workspace);
    } catch (e) {
      return fail('handler_threw', `cannot create the session workspace: ${errorMessage(e)}`);
    }
  }

  const timeoutMs = Number.isFinite(job.timeoutMs) && job.timeoutMs > 0 ? job.timeoutMs : DEFAULT_TOOL_TIMEOUT_MS;
  const stop = withDeadline(signal, Math.min(timeoutMs, MAX_TIMER_MS), options.controller);
  const ctx = contextFor(job, stop, timeoutMs, config);
  const ask = options.requestInput;
  if (ask) ctx.requestInput = heldWhileAsking(ask, stop);
  let graceTimer: NodeJS.Timeout | undefined;
  try {
    const settled = settle(handler, job.args, ctx);
    const first = await settledOrStopped(settled, stop);
    if (first !== 'aborted' && first.ok) return await okOutcome(job, first.value, fail, started, ranOn);
    if (first !== 'aborted' && !first.ok && !stop.aborted) return fromThrown(first.error, fail);

    // Stopped: give the handler a moment to wind down, then classify by which signal fired.
    const grace = new Promise<'still running'>((resolve) => {
      graceTimer = setTimeout(() => resolve('still running'), options.settleGraceMs ?? SETTLE_GRACE_MS);
    });
    // A fenced call (its worker lost its hold on it) is waited for to its end, with no grace bound:
    // its place counts as free only once it is dead (run_command: its sandbox killed and empty).
    const waitFor = isFenced(signal.reason) ? settled : Promise.race([settled, grace]);
    const after = first === 'aborted' ? await waitFor : first;
    const cancelled = signal.aborted && !isDeadlineAbort(signal);
    return reportStopped({ name: job.name, timeoutMs, cancelled, after, fail });
  } finally {
    stop.dispose();
    clearTimeout(graceTimer);
  }
}

type Fail = (kind: ExecFailureKind, message: string, details?: unknown) => ExecOutcome;

/** The outcome of a call stopped by the caller (`cancelled`) or by its deadline (`timeout`). */
function reportStopped(stop: {
  name: string;
  timeoutMs: number;
  cancelled: boolean;
  after: Settled | 'still running';
  fail: Fail;
}): ExecOutcome {
  const { after, fail } = stop;
  const kind = stop.cancelled ? 'run_cancelled' : 'deadline';
  // A handler that stopped with its own word on it (a command's partial output) keeps it.
  if (after !== 'still running' && !after.ok && isToolError(after.error) && failureKindOf(after.error.code) === kind) {
    return fail(kind, after.error.message, after.error.details);
  }
  const what = stop.cancelled ? 'the call was cancelled' : `${stop.name} passed its deadline of ${stop.timeoutMs} ms`;
  return fail(kind, after === 'still running' ? `${what}; it ignored the stop signal and may still be running` : what);
}

/** A call's question asker that holds its deadline while the question waits (a person's answer is not the tool's time). */
function heldWhileAsking(ask: InputRequester, stop: DeadlineSignal): InputRequester {
  return async (request, signal) => {
    const release = stop.hold();
    try {
      return await ask(request, signal);
    } finally {
      release();
    }
  };
}

/** The handler's context; its `signal` is made when the handler first reads it (see withDeadline). */
function contextFor(job: ExecJob, stop: DeadlineSignal, timeoutMs: number, config: HandlerConfig): HandlerContext {
  return {
    get signal() {
      return stop.signal;
    },
    workspace: job.workspace,
    session: job.session,
    tenant: job.tenant,
    run: job.run,
    round: job.round,
    toolCallId: job.toolCallId,
    callId: job.toolCallId,
    idempotencyKey: idempotencyKeyOf(job),
    timeoutMs,
    config,
    ...(job.resultBudget ? { resultBudget: job.resultBudget } : {}),
  };
}

/** Whichever comes first: the handler's end, or the stop (`Promise.race` without a promise for the stop). */
function settledOrStopped(settled: Promise<Settled>, stop: DeadlineSignal): Promise<Settled | 'aborted'> {
  return new Promise((resolve) => {
    settled.then(resolve);
    stop.onStop(() => resolve('aborted'));
  });
}

/** Runs the handler, its result or throw (a synchronous one too) as a value. */
async function settle(handler: Handler, args: Record<string, unknown>, ctx: HandlerContext): Promise<Settled> {
  try {
    return { ok: true, value: await handler(args, ctx) };
  } catch (error) {
    return { ok: false, error };
  }
}

function fromThrown(error: unknown, fail: Fail): ExecOutcome {
  if (isToolError(error)) {
    // worker_lost is the coordinator's verdict, never a handler's.
    const kind = error.code === 'worker_lost' ? 'handler_threw' : failureKindOf(error.code);
    return fail(kind, error.message, error.details);
  }
  const message = errorMessage(error);
  return fail('handler_threw', message || (error instanceof Error ? error.name : 'the handler failed'));
}

/** A handler's value as an ok outcome: serialised, held to the session's result budget, then to MAX_OUTPUT_BYTES. */
async function okOutcome(
  job: ExecJob,
  value: unknown,
  fail: Fail,
  started: number,
  ranOn: string,
): Promise<ExecOutcome> {
  const output = serialiseOutput(value, job.resultBudget ? Number.POSITIVE_INFINITY : MAX_OUTPUT_BYTES);
  if ('problem' in output) return fail('handler_threw', output.problem);
  let budgeted: Budgeted = { output: output.value };
  if (job.resultBudget) {
    try {
      budgeted = await applyResultBudget(job, output.value);
    } catch (e) {
      return fail('handler_threw', `cannot write the output's artifact to the workspace: ${errorMessage(e)}`);
    }
    const capped = serialiseOutput(budgeted.output, MAX_OUTPUT_BYTES);
    if ('problem' in capped) return fail('handler_threw', capped.problem);
  }
  const durationMs = Math.round(performance.now() - started);
  return budgeted.artifact
    ? { status: 'ok', output: budgeted.output, durationMs, ranOn, artifact: budgeted.artifact }
    : { status: 'ok', output: budgeted.output, durationMs, ranOn };
}

/**
 * The output as it will cross the wire: JSON round-tripped, so embedded and distributed
 * modes return the same value, and refused past `maxBytes` (MAX_OUTPUT_BYTES; under a result
 * budget that cap holds for what replaces the output instead).
 */
function serialiseOutput(value: unknown, maxBytes: number): { value: unknown } | { problem: string } {
  let json: string | undefined;
  try {
    json = JSON.stringify(value ?? null);
  } catch (e) {
    return { problem: `the tool's output is not JSON: ${errorMessage(e)}` };
  }
  if (json === undefined) return { problem: 'the tool returned no JSON output' };
  const bytes = Number.isFinite(maxBytes) ? Buffer.byteLength(json) : 0;
  if (bytes > maxBytes) return { problem: `the tool's output is ${bytes} bytes, over the limit of ${maxBytes} bytes` };
  return { value: JSON.parse(json) };
}
