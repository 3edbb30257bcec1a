import type { DispatchConfig, Executor } from '@tool-dispatch/shared';
import type { CallProgress } from '../executors/call-progress.js';
import type { RoundLedger } from '../ledger/round-ledger.js';
import type { Limits } from '../limits/limits.js';
import type { RoundHooks, RoundRef } from '../model.js';
import type { Catalog } from '../rules/catalog.js';
import type { NamedLimits } from '../rules/named-limits.js';
import { ActiveRuns, runSignalListeners } from './active-runs.js';
import { RoundAdmission } from './admission.js';
import type { AsyncRoundDeps } from './async-round.js';
import { RoundRecovery } from './recovery.js';
import { RoundCancels } from './round-cancels.js';
import type { RoundViewDeps } from './round-view.js';
import { RoundWaiters } from './round-waiters.js';
import type { RoundDeps } from './run-round.js';
import { type RoundsDeps, startRound } from './submit-round.js';

/** What the rounds are built from: the engine's seams and settings, and what the engine keeps of its own. */
export interface RoundsSetup extends Pick<RoundDeps, 'store' | 'events' | 'confirmations' | 'inputs'> {
  config: DispatchConfig;
  executor: Executor;
  catalog: Catalog;
  limits: Limits;
  namedLimits?: NamedLimits | undefined;
  hooks?: RoundHooks | undefined;
  ledger?: RoundLedger | undefined;
  coordinatorId: string;
  leaseMs: number;
  /** Aborted once a drain's grace has passed: parked calls' waits let go. */
  parkRelease: AbortSignal;
  isDraining(): boolean;
  /** Takes the tools the workers announce into the catalog (a round taken over may call ones not listed yet). */
  syncCatalog(): Promise<void>;
  onError?: ((error: Error) => void) | undefined;
  onRecover?: ((ref: RoundRef, from: { coordinator: string; decided: boolean }) => void) | undefined;
  /** (v1.3) Where the executor's calls are, for a running round's view. */
  callProgress?: CallProgress | undefined;
}

/** The passes' seams, the rounds in flight, their admission (TD_MAX_ROUNDS_IN_FLIGHT) and, with a ledger, their recovery. */
export function roundsOf(s: RoundsSetup): {
  rounds: RoundsDeps;
  admission: RoundAdmission;
  asyncRounds: AsyncRoundDeps;
} {
  const { config, hooks } = s;
  const deps: RoundDeps = {
    store: s.store,
    events: s.events,
    confirmations: s.confirmations,
    executor: s.executor,
    catalog: s.catalog,
    limits: s.limits,
    maxConcurrentTools: config.maxConcurrentTools,
    namedLimits: s.namedLimits,
    confirmTimeoutMs: config.confirmTimeoutMs,
    inputs: s.inputs,
    inputTimeoutMs: config.inputTimeoutMs,
    parkRelease: s.parkRelease,
    hooks,
  };
  const admission = new RoundAdmission({
    maxInFlight: config.maxRoundsInFlight,
    queueMs: config.roundQueueMs,
    ...(hooks?.roundsWaiting ? { onWaiting: hooks.roundsWaiting.bind(hooks) } : {}),
  });
  const runs = new ActiveRuns(hooks?.roundsInProgress?.bind(hooks), runSignalListeners(config.maxConcurrentTools));
  const rounds: RoundsDeps = { deps, runs, recovery: undefined };
  const cancels = new RoundCancels();
  if (s.ledger)
    rounds.recovery = new RoundRecovery({
      ledger: s.ledger,
      store: s.store,
      coordinatorId: s.coordinatorId,
      leaseMs: s.leaseMs,
      isDraining: s.isDraining,
      resume: async (ref, state, taken, from) => {
        const resume = { origin: taken.origin || from, ...(taken.planned ? { planned: taken.planned } : {}) };
        await s.syncCatalog().catch(() => undefined);
        // A round taken over can be cancelled alone too (`cancelRound`), here where it now runs.
        const own = cancels.register(ref);
        const running = startRound(rounds, ref, state, { rawCalls: taken.calls, resume, cancel: own.signal });
        own.running(running);
        return running;
      },
      onError: s.onError,
      onRecover: s.onRecover,
    });
  const views: RoundViewDeps = {
    store: s.store,
    confirmations: s.confirmations,
    inputs: s.inputs,
    progress: s.callProgress,
    waiters: new RoundWaiters(s.events),
  };
  const onError = s.onError ?? (() => {});
  const asyncRounds = { rounds, views, cancels, admit: () => admission.admit(), onError };
  return { rounds, admission, asyncRounds };
}
