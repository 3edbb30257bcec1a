/** Result statuses and error codes, spelled as on the wire (API.md). */
export const STATUSES = [
  'ok',
  'error',
  'deduped',
  'cached',
  'schema',
  'refused',
  'unknown',
  'invalid',
  'denied',
] as const;
export type Status = (typeof STATUSES)[number];

/** Codes of calls that ran or were handed to an executor (an executor's outcome carries one). */
export const ERROR_CODES = [
  'handler_error',
  'timeout',
  'worker_lost',
  'cancelled',
  'unavailable',
  'sandbox_unavailable',
  'resource_limit',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A call the coordinator never started: over a TD_LIMITS limit past maxWaitMs or its deadline (API.md v1.2). */
export type AdmissionErrorCode = 'rate_limited';

/** Statuses that end a call in pass 1 without running it; their `error.code` equals the status. */
export type StopStatus = 'refused' | 'unknown' | 'invalid' | 'denied';

export interface ResultError {
  code: ErrorCode | AdmissionErrorCode | StopStatus;
  message: string;
  details?: unknown;
}

/**
 * Who let a call through the confirm gate, and when (API.md v1.2): a token's name, `auto`
 * (the session's autoApprove), `mcp-client` (an MCP client's elicitation answer) or
 * `grant:<grantId>`. Denials carry it under `error.details.approval`.
 */
export interface Approval {
  by: string;
  /** RFC 3339 time of the answer. */
  at: string;
}

/** One call's result, as answered to the client and recorded in history. */
export interface CallResult {
  id: string;
  /** The tool's name after unwrapping run_tool. */
  name: string;
  status: Status;
  output?: unknown;
  error?: ResultError;
  dedupedFrom?: string;
  dedupedFromRound?: string;
  durationMs: number;
  /** Where the call ran (`embedded`, or a worker id); absent when it never ran. Beyond API.md. */
  ranOn?: string;
  /** (v1.2) Present on every call that passed the confirm gate. */
  approval?: Approval;
  /** The key its side effects carry downstream (API.md "keys for side effects"); every executed call has one. */
  idempotencyKey?: string;
}

/** Every way a call can end other than `ok`/`deduped`/`cached`/`schema`. */
export type FailureKind =
  | 'not_loaded'
  | 'bad_run_tool'
  | 'no_definition'
  | 'no_handler'
  | 'bad_args'
  | 'not_a_function_call'
  | 'denied_by_user'
  | 'confirm_timeout'
  | 'handler_threw'
  | 'deadline'
  | 'worker_died'
  | 'run_cancelled'
  /** A side effect whose start the Redis replicas did not acknowledge (TD_REDIS_REPLICA_ACKS): it did not run. */
  | 'start_unacknowledged'
  /** A tool the catalog knew, with no live worker to run it within the round's patience (the registry lost, say). */
  | 'no_workers'
  /** Over a TD_LIMITS limit past maxWaitMs or its deadline: never started. */
  | 'over_limit'
  /** (v1.3) The worker could not make a sandbox for a command (TD_SANDBOX on): nothing ran. */
  | 'no_sandbox'
  /** (v1.3) A sandboxed command went over TD_SANDBOX_MEMORY_MB and was killed whole. */
  | 'over_resource_limit';

/** The one mapping from a failure kind to the (status, code) pair the client sees. */
export const FAILURES = {
  not_loaded: { status: 'refused', code: 'refused' },
  bad_run_tool: { status: 'invalid', code: 'invalid' },
  no_definition: { status: 'unknown', code: 'unknown' },
  no_handler: { status: 'unknown', code: 'unknown' },
  bad_args: { status: 'invalid', code: 'invalid' },
  not_a_function_call: { status: 'invalid', code: 'invalid' },
  denied_by_user: { status: 'denied', code: 'denied' },
  confirm_timeout: { status: 'denied', code: 'denied' },
  handler_threw: { status: 'error', code: 'handler_error' },
  deadline: { status: 'error', code: 'timeout' },
  worker_died: { status: 'error', code: 'worker_lost' },
  run_cancelled: { status: 'error', code: 'cancelled' },
  start_unacknowledged: { status: 'error', code: 'unavailable' },
  no_workers: { status: 'error', code: 'unavailable' },
  over_limit: { status: 'error', code: 'rate_limited' },
  no_sandbox: { status: 'error', code: 'sandbox_unavailable' },
  over_resource_limit: { status: 'error', code: 'resource_limit' },
} as const satisfies Record<FailureKind, { status: Status; code: ResultError['code'] }>;

export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** ok, deduped and cached carry the tool's output and are not errors for the model. */
export function isSuccess(status: Status): boolean {
  return status === 'ok' || status === 'deduped' || status === 'cached';
}

/**
 * (v1.3) Where a call of a running round is (API.md "Rounds that outlive their request"), as
 * `GET .../rounds/{round}` answers while the round runs.
 */
export const CALL_STATES = ['queued', 'running', 'waiting_for_approval', 'waiting_for_input', 'done'] as const;
export type CallState = (typeof CALL_STATES)[number];

/** (v1.3) One call of a running round: its id and tool name (run_tool unwrapped), and its state. */
export interface RoundCallState {
  id: string;
  name: string;
  state: CallState;
}

/** (v1.3) The `202` of `POST .../rounds` with `Prefer: respond-async`: the round goes on, its answer at `Location`. */
export interface RoundAccepted {
  round: string;
  run: string;
  status: 'running';
}

/** (v1.3) The `202` of `GET .../rounds/{round}` while the round runs. */
export interface RoundRunning extends RoundAccepted {
  calls: RoundCallState[];
}
