import { RequestError } from '../request-error.js';

export interface RoundAdmissionOptions {
  /** TD_MAX_ROUNDS_IN_FLIGHT: rounds this coordinator runs at once. */
  maxInFlight: number;
  /** TD_ROUND_QUEUE_MS: how long a round may wait for its turn before it is answered 503 overloaded. */
  queueMs: number;
  /** The rounds waiting, each time the number changes (a metric). */
  onWaiting?: (n: number) => void;
}

interface Waiter {
  admit(): void;
  timer: NodeJS.Timeout;
}

/**
 * The coordinator's own limit on rounds in flight. Past `maxInFlight`, a round waits for its
 * turn in arrival order, before it begins (it holds no state while it waits, so a retry is a
 * fresh submission); one that waited `queueMs` is refused `overloaded` (503 with Retry-After).
 * Saturated, a coordinator that takes every round at once holds them all in memory and answers
 * none of them sooner; this one holds at most `maxInFlight` and answers the rest in order, or
 * says it is overloaded.
 */
export class RoundAdmission {
  private inFlight = 0;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: RoundAdmissionOptions) {
    for (const [name, v] of [
      ['maxInFlight', options.maxInFlight],
      ['queueMs', options.queueMs],
    ] as const) {
      if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
    }
  }

  get size(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waiting.length };
  }

  /** Resolves with the round's release once it may run; rejects `overloaded` after `queueMs` of waiting. */
  admit(): Promise<() => void> {
    if (this.inFlight < this.options.maxInFlight && this.waiting.length === 0) {
      this.inFlight++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(waiter.timer);
          this.inFlight++;
          resolve(this.releaser());
        },
        timer: setTimeout(() => {
          this.remove(waiter);
          const { maxInFlight, queueMs } = this.options;
          reject(
            new RequestError(
              'overloaded',
              `this coordinator has ${maxInFlight} rounds in flight (TD_MAX_ROUNDS_IN_FLIGHT) and this one waited ${queueMs} ms (TD_ROUND_QUEUE_MS) for its turn; nothing of it began: send it again`,
            ),
          );
        }, this.options.queueMs),
      };
      this.waiting.push(waiter);
      this.options.onWaiting?.(this.waiting.length);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      const next = this.waiting.shift();
      if (next) {
        this.options.onWaiting?.(this.waiting.length);
        next.admit();
      }
    };
  }

  private remove(waiter: Waiter): void {
    const i = this.waiting.indexOf(waiter);
    if (i >= 0) this.waiting.splice(i, 1);
    this.options.onWaiting?.(this.waiting.length);
  }
}
