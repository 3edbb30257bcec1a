import { ToolError } from '@tool-dispatch/shared';

/** Whether a signal was aborted by a deadline (`AbortSignal.timeout`) rather than by a caller. @internal */
export function isDeadlineAbort(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'TimeoutError';
}

/**
 * The ToolError for work stopped by `signal`: `timeout` when its deadline passed, else
 * `cancelled`. `what` says what happened to the work. @internal
 */
export function abortError(signal: AbortSignal, what?: string, details?: unknown): ToolError {
  const deadline = isDeadlineAbort(signal);
  const message = `${deadline ? 'the call passed its deadline' : 'the call was cancelled'}${what ? `; ${what}` : ''}`;
  return new ToolError(deadline ? 'timeout' : 'cancelled', message, details);
}
