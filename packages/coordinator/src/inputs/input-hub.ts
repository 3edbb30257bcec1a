import type { InputAnswer, InputSettlement, ParkedInput } from '../model.js';

export type { InputAnswer, InputKind, InputSettlement, ParkedInput } from '../model.js';

/** What parking a call found (`InputHub.park`). */
export type ParkOutcome =
  /** Waiting in the store: `input` as stored (a call parked before keeps its first entry and deadline); `fresh` when this park stored it. */
  | { kind: 'parked'; input: ParkedInput; fresh: boolean }
  /** Ended already (answered while no coordinator waited, say): nothing waits. */
  | { kind: 'settled'; settlement: InputSettlement };

/** How a wait ended: the call's settlement, or `released` (this coordinator lets go; the call stays parked). */
export type InputWait = InputSettlement | { by: 'released' };

/** Looking a parked call up by inputId, or by a callId exactly one parked call of the session has. */
export type FindInput =
  | { kind: 'found'; input: ParkedInput }
  | { kind: 'not_found' }
  | { kind: 'ambiguous'; count: number };

/**
 * Where parked calls wait for their answers (API.md "Parked calls"). Everything is by inputId,
 * which is deterministic per (round, call index): the coordinator waiting may be another than
 * the one that takes the answer, or one that took the round over from a coordinator that died,
 * and parks the same call again to find the answer posted meanwhile.
 */
export interface InputHub {
  /** True when other coordinators see these parked calls: one that stops leaves them parked for another. */
  readonly shared: boolean;
  /** Parks a call, idempotently by inputId; an input settled already is answered from its settlement. */
  park(input: ParkedInput): Promise<ParkOutcome>;
  /**
   * Waits for a parked call's settlement: its answer (however it arrives), its deadline passing
   * (`timeout`), `signal` aborting (`cancelled`); each of the last two settled in the store first,
   * so an answer that won the race holds. `release` aborting ends the wait with `released` and
   * leaves the call parked.
   */
  wait(input: ParkedInput, options: { signal: AbortSignal; release?: AbortSignal }): Promise<InputWait>;
  /** Settles parked calls with `settlement` unless already settled; what holds for each, in order. */
  settle(session: string, inputIds: readonly string[], settlement: InputSettlement): Promise<InputSettlement[]>;
  find(session: string, idOrCallId: string): Promise<FindInput>;
  /** Settles a parked call with its answer; `not_found` when nothing is parked under the id (any more). */
  answer(session: string, inputId: string, answer: InputAnswer): Promise<'answered' | 'not_found'>;
  /** The session's parked calls whose deadline has not passed, oldest first (a round's in call order). */
  pending(session: string): Promise<ParkedInput[]>;
  /** Stops waiting (waits end `released`); parked calls stay in the store. */
  close(): Promise<void>;
}

/** Oldest first; a round's parked calls in call order, a call's questions after it in the order asked. */
export function byParkOrder(a: ParkedInput, b: ParkedInput): number {
  return (
    a.createdAt - b.createdAt ||
    a.round.localeCompare(b.round) ||
    a.callIndex - b.callIndex ||
    a.inputId.length - b.inputId.length ||
    a.inputId.localeCompare(b.inputId)
  );
}
