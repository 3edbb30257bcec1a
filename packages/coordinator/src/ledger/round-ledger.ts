import type { RoundRef } from '../model.js';

/**
 * Which coordinators are alive, and the rounds each is running, so the rounds of one that died
 * are found and finished by another (DESIGN.md distributed shape). A coordinator renews one
 * lease for itself (not one per round); a round is listed under its owner before it begins and
 * comes off the list with a later heartbeat once finished. The round itself (its calls, its
 * owner, for fencing) lives in the Store (`beginRound`, `takeRound`, `commitRound`).
 */
export interface RoundLedger {
  /** Keeps `owner` alive for `leaseMs` more, and takes the rounds it finished off its list. */
  heartbeat(owner: string, leaseMs: number, finished: readonly RoundRef[]): Promise<void>;
  /** Lists a round under its owner (before the round is begun). */
  track(ref: RoundRef, owner: string): Promise<void>;
  /**
   * Adopts the list of one coordinator whose lease lapsed before `now` onto `owner`'s, atomically
   * (so one adopter gets each round); null when no lease lapsed.
   */
  adoptLapsed(owner: string, now: number): Promise<{ from: string; rounds: RoundRef[] } | null>;
  /** Whether `owner`'s list holds the round (a running round on no list is an orphan: nobody will finish it). */
  isListed(ref: RoundRef, owner: string): Promise<boolean>;
  /** A coordinator leaving with every round finished: it and its list go. */
  leave(owner: string): Promise<void>;
}

/** `session|run|round` (ids never contain `|`). */
export const roundMember = (r: RoundRef) => `${r.session}|${r.run}|${r.round}`;

export function parseRoundMember(member: string): RoundRef | undefined {
  const [session, run, round] = member.split('|');
  return session && run && round ? { session, run, round } : undefined;
}

/**
 * A run's cancel (`DELETE .../runs/{run}`) heard by every coordinator, whichever one the request
 * reached: each cancels the run's rounds it is running and says how many calls that ended.
 */
export interface RunCancelBus {
  /**
   * Starts hearing other coordinators' cancels; `cancelHere` cancels this coordinator's rounds of
   * the run (v1.3: with `round`, only that round).
   */
  start(cancelHere: (session: string, run: string, round?: string) => Promise<number>): Promise<void>;
  /** Asks every other live coordinator to cancel the run (or one round of it); the calls that ended cancelled there. */
  cancelElsewhere(session: string, run: string, round?: string): Promise<number>;
  close(): Promise<void>;
}
