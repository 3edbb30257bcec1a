import type { AnnouncedTool } from './mcp.js';
import { type ErrorCode, FAILURES } from './result.js';
import type { Artifact, JobBudget, ResultBudget } from './result-budget.js';

/** Which queue a call runs on: concurrent tools, or the serial (concurrency-1) queue. */
export type QueueClass = 'concurrent' | 'serial';

/** One execution request: serialisable, so it crosses the BullMQ seam unchanged. */
export interface ExecJob {
  session: string;
  tenant: string;
  run: string;
  round: string;
  /**
   * The model's id for this tool call (the request's `id` / `call_id` / `tool_use_id`), as the
   * API's confirmations, inputs and events name `callId`. Not the call id across the seam: that is
   * `callIdFor(round, callIndex)` (ARCHITECTURE.md glossary).
   */
  toolCallId: string;
  callIndex: number;
  name: string;
  args: Record<string, unknown>;
  /** Absolute path of the session workspace. */
  workspace: string;
  queue: QueueClass;
  timeoutMs: number;
  /** W3C trace context (traceparent, tracestate) of the parent span. */
  trace?: Record<string, string>;
  /**
   * The coordinator whose namespace holds this call's outcome field and cancel mark
   * (RedisKeys.outcome): the one that first enqueued the call. Set by a coordinator that took the
   * round over from a dead one; absent, it is the coordinator enqueuing the call.
   */
  origin?: string;
  /**
   * The session's result budget (API.md v1.2): where the output is produced, an output over
   * `call` is written to an artifact and replaced; with `round`, a long output's artifact is
   * written in case the round cuts it (when longer than `standbyOver`). Absent: the output goes as it is.
   */
  resultBudget?: JobBudget;
}

/**
 * A call's id across the coordinator/worker seam (ARCHITECTURE.md glossary): `<round>-<call index>`,
 * unique across rounds. It keys the call's outcome, cancel mark, answers and results-stream entries,
 * and is the BullMQ job id of a call enqueued alone (`batchJobIdFor`), so BullMQ forbids ':' in it.
 */
export function callIdFor(round: string, callIndex: number): string {
  if (round.includes(':'))
    throw new Error(`round id ${JSON.stringify(round)} contains ':', which BullMQ job ids cannot`);
  return `${round}-${callIndex}`;
}

/** A call id's round and call index (the inverse of callIdFor: the index follows the last '-'). */
export function splitCallId(callId: string): { round: string; callIndex: number } {
  const dash = callId.lastIndexOf('-');
  const callIndex = Number(callId.slice(dash + 1));
  if (dash <= 0 || !Number.isInteger(callIndex) || callIndex < 0 || callId.slice(dash + 1) !== String(callIndex))
    throw new Error(`call id ${JSON.stringify(callId)} is not <round>-<call index>`);
  return { round: callId.slice(0, dash), callIndex };
}

export type ExecOutcome =
  | {
      status: 'ok';
      output: unknown;
      durationMs: number;
      ranOn: string;
      /** The artifact holding the whole output, written for a round budget (the output itself not replaced). */
      artifact?: Artifact;
    }
  | { status: 'error'; code: ErrorCode; message: string; details?: unknown; durationMs: number; ranOn?: string };

/** Pass 2's seam: runs one call somewhere (in-process, or on a worker through BullMQ). */
export interface Executor {
  execute(job: ExecJob, signal: AbortSignal, options?: ExecuteOptions): Promise<ExecOutcome>;
  /** Names of tools that have a registered handler somewhere. */
  handlerNames(): Promise<ReadonlySet<string>>;
  /**
   * The MCP servers' tools the executor's workers announce (v1.1); the same array while nothing
   * changed, so a catalog can tell a change by identity. Absent: none. The array itself when the
   * executor has it at hand (in-process, or read recently), so a round does not wait a turn for it.
   */
  announcedTools?(): readonly AnnouncedTool[] | Promise<readonly AnnouncedTool[]>;
  /**
   * Told once a round is committed, with the calls it ran and the coordinator whose namespace holds
   * their outcomes (`ExecJob.origin`; absent: this one): what the executor kept of them can go.
   */
  committed?(round: string, callIndexes: readonly number[], origin?: string): void;
  close(): Promise<void>;
}

/** Settings handlers read (from the worker's environment). */
export interface HandlerConfig {
  httpAllow: string[];
  searchUrl: string | undefined;
}

/** What a handler gets besides its args. */
export interface HandlerContext {
  signal: AbortSignal;
  /** Absolute path of the session workspace; every path argument is resolved inside it. */
  workspace: string;
  session: string;
  tenant: string;
  run: string;
  round: string;
  /** The model's id for this tool call (ExecJob.toolCallId). */
  toolCallId: string;
  /** @deprecated The same as `toolCallId` (the model's id, not the seam's call id); kept for handlers written before it. */
  callId: string;
  /**
   * The call's idempotency key (API.md "keys for side effects"): the same on every retry of its
   * round, after a takeover and on a redelivery; hand it to whatever the call changes downstream.
   */
  idempotencyKey: string;
  /** The execution deadline in ms (handlers with their own `timeoutMs` argument use that). */
  timeoutMs: number;
  config: HandlerConfig;
  /** The session's result budget: a handler may then produce more than its usual cut (an artifact takes it). */
  resultBudget?: ResultBudget;
  /**
   * Asks a person for input while the call runs (an MCP server's elicitation): the question is
   * parked like a call (API.md "Parked calls"), and the call's deadline stands still until it is
   * answered. Absent where nobody can be asked.
   */
  requestInput?: InputRequester;
}

/** A question a running call puts to a person, parked until it is answered through the inputs endpoints. */
export interface InputRequest {
  kind: 'elicitation';
  /** What the parked input shows as its `args` (an elicitation's `message` and `requestedSchema`). */
  args: Record<string, unknown>;
}

/** How a parked question was answered: the posted `output`, or why there is none (`error`: posted, timed out, cancelled). */
export type InputReply = { output: unknown } | { error: string };

/** Puts a question to a person; settles once it is answered, times out or `signal` aborts. */
export type InputRequester = (request: InputRequest, signal: AbortSignal) => Promise<InputReply>;

/** What pass 2 gives an executor with each call besides the job. */
export interface ExecuteOptions {
  /** Parks a running call's questions (absent: the call cannot ask). */
  requestInput?: InputRequester;
}

/** A tool's implementation. Throw a `ToolError` for a specific code; any other throw is `handler_error`. */
export type Handler = (args: Record<string, unknown>, ctx: HandlerContext) => Promise<unknown>;

/** The failure kinds a call can end with once it was handed to an executor (each `error` with its code). */
export type ExecFailureKind =
  | 'handler_threw'
  | 'deadline'
  | 'worker_died'
  | 'run_cancelled'
  | 'start_unacknowledged'
  | 'no_workers'
  | 'no_sandbox'
  | 'over_resource_limit';

/** The failure kind behind each error code (the inverse of `FAILURES` for executors' kinds). */
const KIND_OF_CODE = {
  handler_error: 'handler_threw',
  timeout: 'deadline',
  worker_lost: 'worker_died',
  cancelled: 'run_cancelled',
  unavailable: 'start_unacknowledged',
  sandbox_unavailable: 'no_sandbox',
  resource_limit: 'over_resource_limit',
} as const satisfies Record<ErrorCode, ExecFailureKind>;

/** The failure kind an error code stands for (a `ToolError`'s code, say). */
export function failureKindOf(code: ErrorCode): ExecFailureKind {
  return KIND_OF_CODE[code];
}

/**
 * How long a worker gives a stopped handler (deadline, cancel) to wind down before it reports;
 * the coordinator waits this much past a call's deadline before it looks for a lost worker.
 */
export const SETTLE_GRACE_MS = 2_000;

/** An executor's failed outcome, its code from the one failure table (`FAILURES`). */
export function failedOutcome(
  kind: ExecFailureKind,
  message: string,
  durationMs: number,
  extra: { details?: unknown; ranOn?: string | undefined } = {},
): Extract<ExecOutcome, { status: 'error' }> {
  const outcome: Extract<ExecOutcome, { status: 'error' }> = {
    status: 'error',
    code: FAILURES[kind].code,
    message,
    durationMs,
  };
  if (extra.details !== undefined) outcome.details = extra.details;
  if (extra.ranOn !== undefined) outcome.ranOn = extra.ranOn;
  return outcome;
}
