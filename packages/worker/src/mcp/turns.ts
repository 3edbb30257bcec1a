import { Slots } from '../support/slots.js';

/**
 * One holder at a time, the rest waiting in order; a waiter whose signal aborts leaves the line.
 * An MCP server link runs one call at a time through it. @internal
 */
export class Turns extends Slots {
  constructor() {
    super(1);
  }

  /** Resolves with the release function once it is this caller's turn; rejects with the signal's reason when it aborts first. */
  take(signal: AbortSignal): Promise<() => void> {
    return this.acquire(signal);
  }
}
