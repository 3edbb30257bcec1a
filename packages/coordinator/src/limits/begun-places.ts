// RedisLimits' part for a round's run places taken in its begin step (v1.3): whose they are, when
// each goes back (at the commit, or at once when some call waits at the limit).
import type { RunPlacesAsk, RunPlacesGive } from '../model.js';
import type { LimitRelease } from './limits.js';

/**
 * A place's state: `idle` (taken at the begin, no call holds it), `claimed` (its call runs),
 * `ended` (its call ended, the place kept for the commit), `committing` (named to the commit).
 */
type Status = 'idle' | 'claimed' | 'ended' | 'committing';

/** One round's places taken at its begin, at one limit. */
interface Begun {
  round: string;
  /** The limit's key base (RedisKeys.limit). */
  base: string;
  ask: RunPlacesAsk;
  places: Map<string, Status>;
  /** Some call waits at the limit: every place goes back as soon as no call holds it. */
  contended: boolean;
  /** The round is over: a place still claimed goes back as its call ends. */
  over: boolean;
}

/** What the places need of RedisLimits. */
export interface BegunPlacesDeps {
  /** Renews the ticket's place with this coordinator's others from now on. */
  hold(base: string, ticket: string): void;
  /** Stops renewing it (given back, or now another grant's). */
  forget(base: string, ticket: string): void;
  /** Gives the ticket's place back now (releaseLimits, with the others of this tick); stops renewing it. */
  give(base: string, concurrency: number, ticket: string): void;
  /** Calls wait at `base` and a place was given back: they look again. */
  wake(base: string): void;
}

/**
 * The places rounds took in their begin step, by round, ticket and limit. A call takes its own
 * (`claim`); it goes back at the round's commit, in the commit's own step, unless some call waits
 * at the limit (`contended`): then every place no call holds goes back at once, and each other as
 * its call ends, as a place acquired one by one would.
 */
export class BegunPlaces {
  private readonly rounds = new Map<string, Begun>();
  private readonly byTicket = new Map<string, Begun>();
  private readonly byBase = new Map<string, Set<Begun>>();

  constructor(private readonly deps: BegunPlacesDeps) {}

  took(round: string, base: string, ask: RunPlacesAsk): void {
    const begun: Begun = { round, base, ask, places: new Map(), contended: false, over: false };
    for (const ticket of ask.tickets) {
      begun.places.set(ticket, 'idle');
      this.byTicket.set(ticket, begun);
      this.deps.hold(base, ticket);
    }
    this.rounds.set(round, begun);
    let atBase = this.byBase.get(base);
    if (!atBase) {
      atBase = new Set();
      this.byBase.set(base, atBase);
    }
    atBase.add(begun);
  }

  /** The ticket's place at `base`, taken at its round's begin and held by no call: now the caller's. */
  claim(base: string, ticket: string): LimitRelease | undefined {
    const begun = this.byTicket.get(ticket);
    const status = begun?.places.get(ticket);
    if (!begun || begun.base !== base || (status !== 'idle' && status !== 'ended')) return undefined;
    begun.places.set(ticket, 'claimed');
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.end(begun, ticket);
    };
  }

  /**
   * A grant asking one by one under a ticket whose place its round took (a serial call, which
   * takes its lane first; a retry of the round): the place is left to it, held in Redis already.
   */
  handOver(ticket: string): void {
    const begun = this.byTicket.get(ticket);
    if (!begun || begun.places.get(ticket) === 'claimed') return;
    this.drop(begun, ticket);
    this.deps.forget(begun.base, ticket);
  }

  /** Calls wait at `base`: every place taken there at a begin goes back as soon as no call holds it. */
  contended(base: string): void {
    for (const begun of this.byBase.get(base) ?? []) {
      begun.contended = true;
      for (const [ticket, status] of [...begun.places])
        if (status === 'idle' || status === 'ended') this.giveNow(begun, ticket);
    }
  }

  giveBackAtCommit(round: string): RunPlacesGive | undefined {
    const begun = this.rounds.get(round);
    if (!begun) return undefined;
    const tickets: string[] = [];
    for (const [ticket, status] of begun.places) {
      if (status !== 'idle' && status !== 'ended') continue;
      begun.places.set(ticket, 'committing');
      tickets.push(ticket);
    }
    return tickets.length > 0 ? { held: begun.ask.held, wait: begun.ask.wait, tickets } : undefined;
  }

  roundEnded(round: string, committed?: { waiters: boolean }): void {
    const begun = this.rounds.get(round);
    if (!begun) return;
    begun.over = true;
    this.rounds.delete(round);
    let gaveBack = false;
    for (const [ticket, status] of [...begun.places]) {
      if (status === 'claimed') continue;
      if (status === 'committing' && committed) {
        this.drop(begun, ticket);
        this.deps.forget(begun.base, ticket);
        gaveBack = true;
      } else this.giveNow(begun, ticket);
    }
    if (gaveBack && committed?.waiters) this.deps.wake(begun.base);
  }

  private end(begun: Begun, ticket: string): void {
    if (begun.places.get(ticket) !== 'claimed') return;
    if (begun.contended || begun.over) this.giveNow(begun, ticket);
    else begun.places.set(ticket, 'ended');
  }

  private giveNow(begun: Begun, ticket: string): void {
    this.drop(begun, ticket);
    this.deps.give(begun.base, begun.ask.concurrency, ticket);
  }

  private drop(begun: Begun, ticket: string): void {
    begun.places.delete(ticket);
    if (this.byTicket.get(ticket) === begun) this.byTicket.delete(ticket);
    if (begun.places.size > 0) return;
    this.rounds.delete(begun.round);
    const atBase = this.byBase.get(begun.base);
    atBase?.delete(begun);
    if (atBase?.size === 0) this.byBase.delete(begun.base);
  }
}
