import type { RoundRef, RunPlacesAsk, RunPlacesGive } from '../model.js';
import type { LimitNow } from '../rules/named-limits.js';

/**
 * Where a limit's places are counted: a session's (its Redis hash slot, with the session's other
 * state), a tenant's, or a named limit of `TD_LIMITS` on its own (`limit`: its name, one slot per limit). Every stage of one scope is taken in
 * one step (one Lua script on Redis).
 */
export type LimitScope = { session: string } | { tenant: string } | { limit: string };

/** Why a call waited at a stage (tracing: the `admission wait` span's reason). */
export type LimitWaitReason = 'serial_lane' | 'run_limit' | 'named_limit';

/** One limit a call holds a place of while it runs. */
export interface LimitStage {
  scope: LimitScope;
  /** The limit's name within its scope: `run:<run>` (the run's places), `run:<run>:serial` (its serial lane). */
  name: string;
  /** Places in flight at most (a positive integer). */
  concurrency: number;
  reason: LimitWaitReason;
  /** Calls started in any window of `windowMs` at most (TD_LIMITS `rate`). */
  rate?: { count: number; windowMs: number };
}

/** A wait for a place at one stage, and how long it lasted (tracing). */
export interface LimitWait {
  reason: LimitWaitReason;
  /** The limit waited for (its stage's name). */
  limit?: string;
  startMs: number;
  endMs: number;
}

/** Lets go of every place a grant holds; idempotent. */
export type LimitRelease = () => void;

/**
 * The admission of calls against named limits (DESIGN.md pass 2: a run's MAX_CONCURRENT_TOOLS
 * places and its serial lane). A call asks for its stages in order and holds each it got while it
 * waits for the next, so a serial call waiting for the lane holds none of the run's places; at
 * each stage waiters are granted in arrival order, and aborting `signal` drops a waiter at once.
 * Shared (Redis), every coordinator admits against the same places, each place leased by its
 * coordinator: one that dies lets go of its places and waits when its lease lapses.
 */
export interface Limits {
  /** True when other coordinators admit against the same places. */
  readonly shared: boolean;
  /**
   * The places now, without a promise, when this implementation can tell at once that they are
   * free (memory); undefined when the call must `acquire`.
   */
  tryAcquire(stages: readonly LimitStage[], ticket?: string): LimitRelease | undefined;
  /**
   * The places, once each stage grants one in turn; rejects with `signal`'s reason when it aborts
   * first. `ticket` names the call's places (its round and index): a coordinator taking a round
   * over asks under the same name and finds the places, or the turn, of the one that died still
   * its own while their lease lasts, so no other call slips in between.
   */
  acquire(
    stages: readonly LimitStage[],
    signal?: AbortSignal,
    onWait?: (wait: LimitWait) => void,
    ticket?: string,
  ): Promise<LimitRelease>;
  /**
   * What each stage holds now (places, its rate window's next token) and how long this process's
   * last calls held a place of it (`retryAfterOf`'s estimate for a call that ended rate_limited).
   */
  peek(stages: readonly LimitStage[]): Promise<LimitNow[]>;
  /** Stops renewing leases and drops every wait (they reject); places held lapse with their lease. */
  close(): Promise<void>;
  /**
   * (v1.3) A round's run places taken in the store's begin step (`RunPlacesAsk`, one per ticket:
   * `runTicketOf`), or undefined where they are not (memory: `tryAcquire` is free already).
   */
  askAtBegin?(stage: LimitStage, tickets: readonly string[]): RunPlacesAsk | undefined;
  /**
   * (v1.3) The begin took `ask`'s places: each is its call's (`tryAcquire` under its ticket finds
   * it) and is renewed meanwhile. A place given back early, at a call's end or unused, only when
   * some call waits at the limit (this process's, or another's, heard over pub/sub); else at the
   * commit (`giveBackAtCommit`).
   */
  took?(round: string, ask: RunPlacesAsk): void;
  /** (v1.3) The places the round's commit gives back in its step: those not given back already (undefined: none). */
  giveBackAtCommit?(round: string): RunPlacesGive | undefined;
  /**
   * (v1.3) The round is over. `committed`: its commit gave back what `giveBackAtCommit` named
   * (`waiters`: calls wait at the limit, woken now); without it (fenced, failed) everything it
   * still holds is given back now. Idempotent.
   */
  roundEnded?(round: string, committed?: { waiters: boolean }): void;
}

/** The name of a call's places (its round and index): the same for a coordinator taking the round over. */
export const runTicketOf = (round: string, index: number): string => `${round}:${index}`;

/** What a call of a run asks for: a place of the run's limit, and for a serial call its serial lane too. */
export type RunPlace = 'concurrent' | 'serial';

/** The stages of one call of a run: the serial lane first (a serial call), then one of the run's `max` places. */
export function runStages(ref: Pick<RoundRef, 'session' | 'run'>, place: RunPlace, max: number): LimitStage[] {
  const scope = { session: ref.session };
  const run: LimitStage = { scope, name: `run:${ref.run}`, concurrency: max, reason: 'run_limit' };
  if (place === 'concurrent') return [run];
  return [{ scope, name: `run:${ref.run}:serial`, concurrency: 1, reason: 'serial_lane' }, run];
}

/** A scope's stable key (maps, Redis hash tags). */
export function scopeKey(scope: LimitScope): string {
  if ('session' in scope) return `s:${scope.session}`;
  return 'tenant' in scope ? `t:${scope.tenant}` : `l:${scope.limit}`;
}
