import { onAbort, ToolError } from '@tool-dispatch/shared';

/** Whether a signal was aborted by a deadline (`AbortSignal.timeout`, or `withDeadline`) rather than by a caller. @internal */
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

/** A caller's signal with a deadline added (withDeadline). @internal */
export interface DeadlineSignal {
  /** Aborts with the caller's reason when it aborts, or with a `TimeoutError` when the deadline passes. */
  readonly signal: AbortSignal;
  /** Whether `signal` has aborted (read without making the signal). */
  readonly aborted: boolean;
  /** Calls `listener` once `signal` aborts (at once if it has); one listener, a second replaces the first. */
  onStop(listener: () => void): void;
  /**
   * Stops the deadline's clock until the returned function is called (a call waiting for a
   * person's answer): the time left is kept, not restarted. Holds nest.
   */
  hold(): () => void;
  /** Clears the timer and the listener on the caller's signal; `signal` stays as it is. */
  dispose(): void;
}

/** The reason AbortSignal.timeout gives, so isDeadlineAbort tells it from a cancel. */
const deadlineReason = () => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

/** A deadline `ms` from now that calls `fire` when it passes, whose clock can be held. */
class DeadlineClock {
  private timer: NodeJS.Timeout | undefined;
  private left: number;
  private startedAt = Date.now();
  private holds = 0;

  constructor(
    ms: number,
    private readonly fire: () => void,
  ) {
    this.left = ms;
    this.timer = setTimeout(fire, ms);
  }

  hold(): () => void {
    if (this.holds++ === 0) {
      clearTimeout(this.timer);
      this.left = Math.max(0, this.left - (Date.now() - this.startedAt));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds > 0) return;
      this.startedAt = Date.now();
      this.timer = setTimeout(this.fire, this.left);
    };
  }

  clear(): void {
    clearTimeout(this.timer);
    this.holds = Number.POSITIVE_INFINITY;
  }
}

/** The one stop listener a DeadlineSignal keeps, and its firing. */
class StopSlot {
  private listener: (() => void) | undefined;
  private fired = false;

  set(listener: () => void): void {
    if (this.fired) listener();
    else this.listener = listener;
  }

  fire(): void {
    if (this.fired) return;
    this.fired = true;
    const f = this.listener;
    this.listener = undefined;
    f?.();
  }
}

/**
 * What `AbortSignal.any([caller, AbortSignal.timeout(ms)])` gives, with one timer cleared by
 * `dispose`: the pair cost about 5% of a worker's CPU at a call per few hundred µs. The call's
 * controller is made only when somebody reads `signal` (a handler that listens for a stop); most
 * handlers never do, and an AbortController was 9% of an embedded round's time. @internal
 */
export function withDeadline(caller: AbortSignal, ms: number, own?: AbortController): DeadlineSignal {
  // The caller's own controller, when it is the call's alone (`own.signal === caller`), takes the
  // deadline too: no second controller, and the caller's abort is the call's.
  if (own && own.signal === caller) return deadlineOn(own, ms);
  let controller: AbortController | undefined;
  let stoppedFor: { reason: unknown } | undefined;
  const slot = new StopSlot();
  const stop = (reason: unknown) => {
    if (stoppedFor) return;
    stoppedFor = { reason };
    controller?.abort(reason);
    slot.fire();
  };
  const clock = new DeadlineClock(ms, function deadlinePassed() {
    stop(deadlineReason());
  });
  let unlisten: (() => void) | undefined;
  if (caller.aborted) stop(caller.reason);
  else unlisten = onAbort(caller, () => stop(caller.reason));
  return {
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (stoppedFor) controller.abort(stoppedFor.reason);
      }
      return controller.signal;
    },
    get aborted() {
      return stoppedFor !== undefined;
    },
    onStop: (listener) => slot.set(listener),
    hold: () => clock.hold(),
    dispose: () => {
      clock.clear();
      unlisten?.();
    },
  };
}

/** withDeadline on a controller the call owns: its timer aborts that controller with a `TimeoutError`. */
function deadlineOn(controller: AbortController, ms: number): DeadlineSignal {
  const { signal } = controller;
  const slot = new StopSlot();
  const clock = new DeadlineClock(ms, function deadlinePassed() {
    controller.abort(deadlineReason());
  });
  let unlisten: (() => void) | undefined;
  if (signal.aborted) slot.fire();
  else unlisten = onAbort(signal, () => slot.fire());
  return {
    signal,
    get aborted() {
      return signal.aborted;
    },
    onStop: (listener) => slot.set(listener),
    hold: () => clock.hold(),
    dispose: () => {
      clock.clear();
      unlisten?.();
    },
  };
}
