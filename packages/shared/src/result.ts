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

export const ERROR_CODES = ['handler_error', 'timeout', 'worker_lost', 'cancelled'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Statuses that end a call in pass 1 without running it; their `error.code` equals the status. */
export type StopStatus = 'refused' | 'unknown' | 'invalid' | 'denied';

export interface ResultError {
  code: ErrorCode | StopStatus;
  message: string;
  details?: unknown;
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
  | 'run_cancelled';

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
} as const satisfies Record<FailureKind, { status: Status; code: ResultError['code'] }>;

export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** ok, deduped and cached carry the tool's output and are not errors for the model. */
export function isSuccess(status: Status): boolean {
  return status === 'ok' || status === 'deduped' || status === 'cached';
}
