import { assertNever, hashCanonical, newId } from '@tool-dispatch/shared';
import { type LimitStage, runStages, runTicketOf } from '../limits/limits.js';
import type {
  NormalCall,
  RoundContext,
  RoundRef,
  RoundResponse,
  RunPlacesAsk,
  SessionState,
  SubmitRoundInput,
} from '../model.js';
import type { ReadAhead } from '../passes/preflight.js';
import { RequestError } from '../request-error.js';
import { isDedupable } from '../rules/dedupe.js';
import { comparedCallOf, normalizeCall, otherItemOf, storedCallOf } from '../rules/normalize-call.js';
import { lookupKeys } from '../rules/preflight.js';
import { roundStartedData } from '../rules/round-started.js';
import type { BeginRound, RoundCallName } from '../store/store.js';
import { within } from '../support/settle.js';
import type { ActiveRuns } from './active-runs.js';
import { awaitRound } from './await-round.js';
import type { RoundRecovery } from './recovery.js';
import { type RoundDeps, type RoundStart, runRound } from './run-round.js';

/** What submitting and starting rounds takes: the passes' seams, the rounds in flight, and recovery (distributed mode). */
export interface RoundsDeps {
  deps: RoundDeps;
  runs: ActiveRuns;
  recovery: RoundRecovery | undefined;
}

/**
 * Begins a round (DESIGN.md: one step that checks the session, the Idempotency-Key and reads the
 * run's dedupe entries pass 1 will look up) and runs it; a retry under a used key waits for the
 * first submission's answer instead, wherever it runs.
 */
export async function submitRound(r: RoundsDeps, input: SubmitRoundInput): Promise<RoundResponse> {
  const begun = await beginSubmitted(r, input);
  if (begun.kind === 'new') return begun.run();
  const recovery = r.recovery;
  const adopt = recovery ? (owner: string) => recovery.adoptOrphan(begun.ref, owner) : undefined;
  return awaitRound(r.deps.store, begun.ref, input.signal, adopt);
}

/**
 * A submitted round begun: `new` (stored; `run` runs it through the passes) or `existing` (the
 * round its Idempotency-Key already names, running or done, wherever it runs). Throws the
 * refusals (no session, a key used for other calls, the store away).
 */
export type BegunRound =
  | { kind: 'new'; ref: RoundRef; run: () => Promise<RoundResponse> }
  | { kind: 'existing'; ref: RoundRef };

export async function beginSubmitted(
  r: RoundsDeps,
  input: SubmitRoundInput,
  /** A cancel of the round's own, made once its id is known (replacing `input.cancel`). */
  cancelOf?: (ref: RoundRef) => AbortSignal,
): Promise<BegunRound> {
  const ref: RoundRef = { session: input.session, run: input.run, round: newId('rnd') };
  const cancel = cancelOf ? cancelOf(ref) : input.cancel;
  const { store, catalog } = r.deps;
  // Listed under this coordinator before it begins (same connection, so in that order): if this
  // coordinator dies, another finds the round and finishes it from the calls beginRound keeps.
  const tracked = r.recovery?.track(ref);
  tracked?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
  const calls = input.calls.map(normalizeCall);
  const stored = input.calls.map((raw, i) => storedCallOf(raw, calls[i] as NormalCall));
  const known = lookupKeys(calls, (name, args) => isDedupable(catalog.get(name), name, args));
  const dedupeKeys = [...new Set([...known.values()].map((k) => k.key))];
  const owner = r.recovery?.owner;
  const started = roundStartedData(ref, calls);
  const places = placesAtBegin(r.deps, ref, calls);
  let begin: BeginRound;
  try {
    const beginning = store.beginRound({
      ...ref,
      idempotencyKey: input.idempotencyKey,
      callsHash: callsHashOf(input, calls),
      callNames: callNamesOf(started.calls as RoundCallName[], input.calls),
      ...(owner ? { owner, calls: stored } : {}),
      ...(store.appendsEvents ? { started } : {}),
      ...(dedupeKeys.length > 0 ? { dedupeKeys } : {}),
      ...(places ? { places } : {}),
    });
    // The listing too: a command the client lost would leave the request waiting for ever.
    const both = tracked ? Promise.all([beginning, tracked]).then(([b]) => b) : beginning;
    begin = await (store.inProcess ? both : withinPatience(both));
  } catch (e) {
    forgetUnbegun(r.recovery, ref, e);
    throw e;
  }
  if (begin.kind !== 'new') r.recovery?.release(ref);
  switch (begin.kind) {
    case 'no_session':
      throw sessionNotFound(input.session);
    case 'conflict':
      throw new RequestError(
        'idempotency_conflict',
        `Idempotency-Key ${input.idempotencyKey} was used in this run for different calls`,
      );
    case 'existing':
      return { kind: 'existing', ref: { ...ref, round: begin.record.round } };
    case 'new': {
      const read: ReadAhead = { calls, known, asked: new Set(dedupeKeys), dedupe: begin.dedupe };
      const start: RoundStart = { rawCalls: input.calls, read, ...(cancel ? { cancel } : {}) };
      const taken = places && begin.placesTaken ? places : undefined;
      return { kind: 'new', ref, run: runOf(r, ref, begin.session, start, taken) };
    }
    default:
      return assertNever(begin, 'beginRound outcome');
  }
}

/** How a begun round runs: through the passes, holding the run's places its begin took (if any) until it ends. */
function runOf(
  r: RoundsDeps,
  ref: RoundRef,
  session: SessionState,
  start: RoundStart,
  taken: RunPlacesAsk | undefined,
): () => Promise<RoundResponse> {
  if (!taken) return () => startRound(r, ref, session, start);
  const { limits } = r.deps;
  return () => {
    limits.took?.(ref.round, taken);
    // Whatever its commit did not give back (failed, fenced) goes back once the round is over.
    return startRound(r, ref, session, start).finally(() => limits.roundEnded?.(ref.round));
  };
}

/** (v1.3) The calls as the round's record lists them: id and name, and the type of an item that is not a function call. */
function callNamesOf(named: RoundCallName[], raw: readonly unknown[]): RoundCallName[] {
  return named.map((c, i) => {
    const item = raw[i];
    return otherItemOf(item) ? { ...c, item: String((item as { type: unknown }).type) } : c;
  });
}

/** The run's places to take in the begin's own step, when they are free and none wait (RedisLimits; undefined: memory). */
function placesAtBegin(deps: RoundDeps, ref: RoundRef, calls: readonly NormalCall[]): RunPlacesAsk | undefined {
  const stage = runStages(ref, 'concurrent', deps.maxConcurrentTools)[0] as LimitStage;
  return deps.limits.askAtBegin?.(
    stage,
    calls.map((c) => runTicketOf(ref.round, c.index)),
  );
}

/** What a retry under the same Idempotency-Key is compared by: the calls after their shape is normalised ('' without a key). */
function callsHashOf(input: SubmitRoundInput, calls: readonly NormalCall[]): string {
  if (input.idempotencyKey === undefined) return '';
  return hashCanonical(input.calls.map((raw, i) => comparedCallOf(raw, calls[i] as NormalCall)));
}

/** A begin that failed: what this coordinator's list keeps of the round. */
function forgetUnbegun(recovery: RoundRecovery | undefined, ref: RoundRef, e: unknown): void {
  // Stored but not acknowledged by the replicas (TD_REDIS_REPLICA_ACKS): it runs nothing here,
  // and leaves this coordinator's list, so a retry under its key takes it over if it survived.
  if (e instanceof RequestError && e.unacknowledged) recovery?.release(ref);
  // Failed, not answered in time, or only its reply lost (the round stored, its key held):
  // resumed later if it was stored.
  else recovery?.unsure(ref);
}

/**
 * How long a round's beginning may take before the request is answered 503 unavailable:
 * longer than the Redis client rides out a node away (CLUSTER_PATIENCE_MS, 12 s), so this only
 * ends a request whose command the client lost (seen on a cluster while a primary was down).
 */
export const BEGIN_PATIENCE_MS = 20_000;

function withinPatience<T>(begin: Promise<T>): Promise<T> {
  return within(begin, BEGIN_PATIENCE_MS, () => {
    const why = `the store did not answer within ${BEGIN_PATIENCE_MS} ms (Redis away?); send the round again under the same Idempotency-Key`;
    throw new RequestError('unavailable', why);
  });
}

/** Runs a round under its run's signal, tracked in flight (and, with recovery, kept for a retry if it fails part way). */
export function startRound(
  r: RoundsDeps,
  ref: RoundRef,
  session: SessionState,
  start: RoundStart,
): Promise<RoundResponse> {
  return r.runs.track(ref, (runSignal) => {
    const signal = start.cancel ? AbortSignal.any([runSignal, start.cancel]) : runSignal;
    const ctx: RoundContext = {
      ref,
      session,
      signal,
      owner: r.recovery?.owner,
      ...(start.resume ? { origin: start.resume.origin } : {}),
    };
    const run = () => runRound(r.deps, ctx, start);
    return r.recovery ? r.recovery.guard(ref, run) : run();
  });
}

export function sessionNotFound(session: string): RequestError {
  return new RequestError(
    'session_not_found',
    `session ${session} does not exist; create it with PUT /v1/sessions/${session}`,
  );
}
