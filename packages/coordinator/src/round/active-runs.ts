import { setMaxListeners } from 'node:events';
import { abortListenersLeft, MAX_CALLS_PER_ROUND } from '@tool-dispatch/shared';
import { type RoundRef, type RoundResponse, runKeyOf } from '../model.js';
import { getOrCreate } from '../support/maps.js';

interface ActiveRound {
  promise: Promise<RoundResponse>;
  controller: AbortController;
}

/**
 * How many runs with no round in flight keep their controller for their next round (an agent's
 * run is a loop of rounds): the oldest goes first past this.
 */
export const IDLE_RUN_CONTROLLERS = 1024;

/**
 * The rounds this coordinator is running, by run: each run's abort signal (one controller for
 * all its rounds in flight, so cancelling the run reaches every one), the count in flight, and
 * a wait for none (drain). A run's controller outlives its last round in flight, unaborted and
 * with nothing listening, for its next round: making one, with its listener limit, was 8% of an
 * embedded round.
 */
export class ActiveRuns {
  private readonly controllers = new Map<string, AbortController>();
  /** Run → the controller of a run with no round in flight, oldest first. */
  private readonly idleControllers = new Map<string, AbortController>();
  private readonly active = new Map<string, Set<ActiveRound>>();
  private inFlight = 0;
  private readonly idle = new Set<() => void>();

  /**
   * `onCount`: the number of rounds in flight, each time it changes. `listenersPerRun`: how many
   * abort listeners a run's signal holds by design (see `runSignalListeners`), so Node warns only past it.
   */
  constructor(
    private readonly onCount?: (n: number) => void,
    private readonly listenersPerRun = 10,
  ) {}

  get size(): number {
    return this.inFlight;
  }

  /** Runs one round of a run under the run's signal, counted in flight until it ends. */
  async track(
    ref: Pick<RoundRef, 'session' | 'run'>,
    round: (signal: AbortSignal) => Promise<RoundResponse>,
  ): Promise<RoundResponse> {
    const runKey = runKeyOf(ref);
    let controller = this.controllers.get(runKey);
    if (!controller || controller.signal.aborted) {
      controller = this.idleControllers.get(runKey);
      this.idleControllers.delete(runKey);
      if (!controller) {
        controller = new AbortController();
        setMaxListeners(this.listenersPerRun, controller.signal);
      }
      this.controllers.set(runKey, controller);
    }
    const set = getOrCreate(this.active, runKey, () => new Set<ActiveRound>());
    this.count(+1);
    const entry: ActiveRound = { promise: round(controller.signal), controller };
    set.add(entry);
    try {
      return await entry.promise;
    } finally {
      set.delete(entry);
      if (set.size === 0) {
        this.active.delete(runKey);
        if (this.controllers.get(runKey) === controller) {
          this.controllers.delete(runKey);
          this.keepIdle(runKey, controller);
        }
      }
      this.count(-1);
    }
  }

  /**
   * Keeps a run's controller for its next round, unless it was aborted or something still
   * listens to it: a listener left behind must never hear a later round's cancel.
   */
  private keepIdle(runKey: string, controller: AbortController): void {
    if (controller.signal.aborted || abortListenersLeft(controller.signal) > 0) return;
    this.idleControllers.set(runKey, controller);
    if (this.idleControllers.size > IDLE_RUN_CONTROLLERS) {
      const oldest = this.idleControllers.keys().next().value;
      if (oldest !== undefined) this.idleControllers.delete(oldest);
    }
  }

  /** How many runs with no round in flight hold a controller for their next round (tests). */
  get idleRuns(): number {
    return this.idleControllers.size;
  }

  /** Aborts every round of the run in flight here and waits for them; the number of calls that ended cancelled. */
  async cancel(session: string, run: string): Promise<number> {
    const runKey = runKeyOf({ session, run });
    this.idleControllers.delete(runKey);
    const rounds = [...(this.active.get(runKey) ?? [])];
    for (const r of rounds) r.controller.abort(new Error('run cancelled'));
    this.controllers.get(runKey)?.abort(new Error('run cancelled'));
    const settled = await Promise.allSettled(rounds.map((r) => r.promise));
    let n = 0;
    for (const s of settled) {
      if (s.status === 'fulfilled')
        n += s.value.results.filter((x) => x.status === 'error' && x.error?.code === 'cancelled').length;
    }
    return n;
  }

  /** Resolves once no round is in flight. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.idle.delete(done);
        resolve();
      };
      this.idle.add(done);
    });
  }

  private count(delta: number): void {
    this.inFlight += delta;
    this.onCount?.(this.inFlight);
    if (this.inFlight === 0) for (const f of this.idle) f();
  }
}

/**
 * The abort listeners one run's signal holds by design: every call of the run listens to it.
 * Each running call (at most `maxConcurrentTools` of a run) holds up to two (the executor's wait
 * and the handler's deadline), the limiter one for all its waiters, and each pending
 * confirmation of a round one (at most MAX_CALLS_PER_ROUND).
 */
export function runSignalListeners(maxConcurrentTools: number): number {
  return 2 * maxConcurrentTools + 1 + MAX_CALLS_PER_ROUND;
}
