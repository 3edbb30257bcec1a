import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  type CallResult,
  type DispatchConfig,
  type ExecJob,
  type Executor,
  hashCanonical,
  isValidId,
  newId,
  type ToolDefinition,
} from '@tool-dispatch/shared';
import type { ConfirmHub, PendingConfirmation } from './confirm/confirm-hub.js';
import { MemoryConfirmHub } from './confirm/memory.js';
import {
  type CatalogView,
  type Dispatcher,
  RequestError,
  type SessionInput,
  type SubmitRoundInput,
  type ToolsView,
} from './dispatcher.js';
import type { DispatchEvent, EventBus } from './events/event-bus.js';
import { MemoryEventBus } from './events/memory.js';
import { type RoundLedger, roundMember } from './ledger/round-ledger.js';
import type {
  DedupeEntry,
  HistoryEntry,
  KnownKey,
  NormalCall,
  PlannedCall,
  RoundRef,
  RoundResponse,
  SessionState,
  StoredPlanned,
} from './model.js';
import { storeRound } from './passes/commit.js';
import { executeCalls } from './passes/execute.js';
import { Catalog, definitionProblem, sessionSpecs } from './rules/catalog.js';
import { isDedupable } from './rules/dedupe.js';
import { normalizeCall } from './rules/normalize-call.js';
import { lookupKeys, preflight } from './rules/preflight.js';
import { buildToolsView, initiallyFetched, loadedSet } from './rules/session-view.js';
import { MemoryStore } from './store/memory.js';
import type { Store } from './store/store.js';
import { getOrCreate } from './support/maps.js';
import { RunLimiter } from './support/run-limiter.js';
import { settleWithin } from './support/settle.js';

export interface EngineOptions {
  config: DispatchConfig;
  /** Pass 2's seam; embedded mode passes a LocalExecutor, distributed mode a QueueExecutor. */
  executor: Executor;
  store?: Store;
  events?: EventBus;
  confirmations?: ConfirmHub;
  catalog?: Catalog;
  /** User tools' definitions (their handlers live on the executor's side). */
  tools?: readonly ToolDefinition[];
  /** Workers alive (distributed mode); readiness needs at least one. */
  workersAlive?: () => Promise<number>;
  hooks?: EngineHooks;
  /** Coordinator leases and round lists, so another coordinator can finish the rounds of one that died. */
  ledger?: RoundLedger;
  /** This coordinator's id, as lease owner (default: a fresh id). */
  coordinatorId?: string;
  /** How long this coordinator's lease lasts without a heartbeat (default 5 s); its rounds are taken over after. */
  leaseMs?: number;
  /** Infrastructure errors the engine recovers from (recovery scans). */
  onError?: (error: Error) => void;
  /** A round taken over from a coordinator that stopped renewing its lease. */
  onRecover?: (ref: RoundRef, from: { coordinator: string; decided: boolean }) => void;
}

/** Observation points for tracing and metrics; all optional. */
export interface EngineHooks {
  round?<T>(info: { session: string; run: string; round: string; calls: number }, fn: () => Promise<T>): Promise<T>;
  pass?<T>(
    name: 'preflight' | 'commit',
    info: { session: string; run: string; round: string },
    fn: () => Promise<T>,
  ): Promise<T>;
  execute?: NonNullable<Parameters<typeof executeCalls>[0]['observe']>;
  /** Each committed result, with the call's resolved name. */
  result?(result: CallResult, planned: PlannedCall): void;
  roundsInProgress?(n: number): void;
  /** Confirmations asked (+n) and decided (-n). */
  confirmations?(delta: number): void;
}

/**
 * How often a round of this coordinator that failed part way is resumed before it is given up
 * (marked failed, so a retry under its Idempotency-Key hears so instead of waiting).
 */
export const MAX_ROUND_RETRIES = 5;

/** Where a round taken over from another coordinator starts again. */
interface Resume {
  /** Pass 1's decisions, kept when a person answered the round's confirmations. */
  planned?: StoredPlanned[];
  /** The coordinator that began the round (its calls' outcomes are under its name). */
  origin: string;
}

/** What a new round read before pass 1: its calls normalised, and the dedupe entries read with its begin. */
interface ReadAhead {
  calls: NormalCall[];
  known: ReadonlyMap<NormalCall, KnownKey>;
  /** The keys read, and the entries found under them. */
  asked: ReadonlySet<string>;
  dedupe: ReadonlyMap<string, DedupeEntry>;
}

interface ActiveRound {
  promise: Promise<RoundResponse>;
  controller: AbortController;
}

/** The coordinator's engine: the three passes over a Store, an Executor, events and confirmations. */
export class Engine implements Dispatcher {
  readonly config: DispatchConfig;
  readonly store: Store;
  readonly events: EventBus;
  readonly confirmations: ConfirmHub;
  readonly tools: Catalog;
  readonly executor: Executor;
  readonly coordinatorId: string;
  readonly leaseMs: number;
  private readonly limiter: RunLimiter;
  private recoveryTimer: NodeJS.Timeout | undefined;
  /** Rounds finished since the last heartbeat, which takes them off this coordinator's list. */
  private finished: RoundRef[] = [];
  /** This coordinator's rounds that failed part way (Redis away, say): resumed by the recovery timer. */
  private readonly stranded = new Map<string, { ref: RoundRef; attempts: number; retrying: boolean }>();
  private readonly runs = new Map<string, AbortController>();
  private readonly active = new Map<string, Set<ActiveRound>>();
  private inFlight = 0;
  private draining = false;
  private readonly idle = new Set<() => void>();

  constructor(private readonly options: EngineOptions) {
    this.config = options.config;
    this.executor = options.executor;
    this.store = options.store ?? new MemoryStore();
    this.events = options.events ?? new MemoryEventBus();
    this.confirmations = options.confirmations ?? new MemoryConfirmHub();
    this.tools = options.catalog ?? new Catalog();
    for (const def of options.tools ?? []) this.tools.register(def);
    this.limiter = new RunLimiter(this.config.maxConcurrentTools);
    this.coordinatorId = options.coordinatorId ?? newId('coord');
    this.leaseMs = options.leaseMs ?? 5_000;
  }

  async putSession(session: string, input: SessionInput): Promise<SessionState> {
    const tenant = input.tenant ?? 'default';
    if (!isValidId(tenant))
      throw new RequestError('invalid_request', `tenant ${JSON.stringify(tenant)} is not a valid id`);
    const clientTools = input.clientTools ?? [];
    const names = new Set<string>();
    for (const def of clientTools) {
      const problem = definitionProblem(def);
      if (problem) throw new RequestError('invalid_request', `clientTools: ${problem}`);
      if (names.has(def.name)) throw new RequestError('invalid_request', `clientTools: ${def.name} is defined twice`);
      if (this.tools.get(def.name))
        throw new RequestError('invalid_request', `clientTools: ${def.name} is already a tool of the catalog`);
      names.add(def.name);
    }
    const workspace = path.resolve(this.config.workspaceRoot, tenant, session);
    await mkdir(workspace, { recursive: true });
    const prev = await this.store.getSession(session);
    const now = Date.now();
    const specs = sessionSpecs(this.tools, clientTools);
    const fetched = new Set([...(prev?.fetched ?? []), ...initiallyFetched(input.provider, clientTools)]);
    const state: SessionState = {
      id: session,
      provider: input.provider,
      tenant,
      autoApprove: input.autoApprove ?? prev?.autoApprove ?? [],
      clientTools,
      loaded: [...loadedSet(input.provider, specs, clientTools)],
      fetched: [...fetched],
      workspace,
      createdAt: prev?.createdAt ?? now,
      updatedAt: now,
    };
    await this.store.putSession(state);
    return state;
  }

  getSession(session: string): Promise<SessionState | null> {
    return this.store.getSession(session);
  }

  private async requireSession(session: string): Promise<SessionState> {
    const s = await this.store.getSession(session);
    if (!s) throw sessionNotFound(session);
    return s;
  }

  private async runnable(state: SessionState): Promise<Set<string>> {
    const names = new Set(await this.executor.handlerNames());
    for (const t of state.clientTools) names.delete(t.name);
    return names;
  }

  async toolsFor(session: string): Promise<ToolsView> {
    const state = await this.requireSession(session);
    const specs = sessionSpecs(this.tools, state.clientTools);
    return buildToolsView(state.provider, specs, await this.runnable(state));
  }

  async submitRound(input: SubmitRoundInput): Promise<RoundResponse> {
    if (this.draining)
      throw new RequestError('shutting_down', 'the coordinator is shutting down; retry on another one');
    const round = newId('rnd');
    const ref: RoundRef = { session: input.session, run: input.run, round };
    const ledger = this.options.ledger;
    const owner = ledger ? this.coordinatorId : undefined;
    // Listed under this coordinator before it begins (same connection, so in that order): if this
    // coordinator dies, another finds the round and finishes it from the calls beginRound keeps.
    const tracked = ledger?.track(ref, this.coordinatorId);
    tracked?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    const calls = input.calls.map(normalizeCall);
    // The run's dedupe entries pass 1 will look up are read with the begin, in the same step.
    const known = lookupKeys(calls, (name, args) => isDedupable(this.tools.get(name), name, args));
    const dedupeKeys = [...new Set([...known.values()].map((k) => k.key))];
    // One step: the session must exist, and is read with the round's start (and, where the store
    // appends events, round.started goes out with it).
    const begin = await this.store.beginRound({
      session: input.session,
      run: input.run,
      round,
      idempotencyKey: input.idempotencyKey,
      // Only a retry under the same key compares it.
      callsHash: input.idempotencyKey === undefined ? '' : hashCanonical(input.calls),
      ...(owner ? { owner, calls: input.calls } : {}),
      ...(this.store.appendsEvents ? { started: startedData(ref, calls) } : {}),
      ...(dedupeKeys.length > 0 ? { dedupeKeys } : {}),
    });
    await tracked;
    if (begin.kind !== 'new' && ledger) this.finished.push(ref);
    if (begin.kind === 'no_session') throw sessionNotFound(input.session);
    if (begin.kind === 'conflict')
      throw new RequestError(
        'idempotency_conflict',
        `Idempotency-Key ${input.idempotencyKey} was used in this run for different calls`,
      );
    if (begin.kind === 'existing') return this.awaitRound(input.session, input.run, begin.record.round, input.signal);
    const state = begin.session;
    const read: ReadAhead = { calls, known, asked: new Set(dedupeKeys), dedupe: begin.dedupe };
    return this.track(input.session, input.run, (controller) =>
      this.runRound(state, ref, input.calls, controller, undefined, read),
    );
  }

  /**
   * Waits for a round started elsewhere (a retry with the same Idempotency-Key) and returns its
   * answer; a round its coordinator gave up on (failed) throws `round_failed`.
   */
  private async awaitRound(session: string, run: string, round: string, signal?: AbortSignal): Promise<RoundResponse> {
    for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
      const rec = await this.store.getRound(session, run, round);
      if (rec?.state === 'done' && rec.response) return rec.response;
      if (rec?.state === 'failed') throw new RequestError('round_failed', rec.error ?? `round ${round} failed`);
      if (signal?.aborted) throw new RequestError('invalid_request', 'the request was aborted');
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  private async track(
    session: string,
    run: string,
    fn: (c: AbortController) => Promise<RoundResponse>,
  ): Promise<RoundResponse> {
    const runKey = `${session}\u0000${run}`;
    let controller = this.runs.get(runKey);
    if (!controller || controller.signal.aborted) {
      controller = new AbortController();
      this.runs.set(runKey, controller);
    }
    const set = getOrCreate(this.active, runKey, () => new Set<ActiveRound>());
    this.inFlight++;
    this.options.hooks?.roundsInProgress?.(this.inFlight);
    const entry: ActiveRound = { promise: fn(controller), controller };
    set.add(entry);
    try {
      return await entry.promise;
    } finally {
      set.delete(entry);
      if (set.size === 0) {
        this.active.delete(runKey);
        if (this.runs.get(runKey) === controller) this.runs.delete(runKey);
      }
      this.inFlight--;
      this.options.hooks?.roundsInProgress?.(this.inFlight);
      if (this.inFlight === 0) for (const f of this.idle) f();
    }
  }

  private async runRound(
    state: SessionState,
    ref: RoundRef,
    rawCalls: unknown[],
    controller: AbortController,
    resume?: Resume,
    read?: ReadAhead,
  ): Promise<RoundResponse> {
    const { session, run, round } = ref;
    const hooks = this.options.hooks;
    const owner = this.options.ledger ? this.coordinatorId : undefined;
    const body = async (): Promise<RoundResponse> => {
      let planned: PlannedCall[];
      if (resume?.planned) planned = this.restorePlanned(state, resume.planned);
      else {
        const calls = read?.calls ?? rawCalls.map(normalizeCall);
        // round.started goes out while pass 1 reads (it only has to come before the round's other
        // events), unless the store appended it when the round began.
        const started =
          resume || this.store.appendsEvents
            ? undefined
            : this.events.publish(session, 'round.started', startedData(ref, calls));
        const pass1 = hooks?.pass
          ? hooks.pass('preflight', ref, () => this.preflight(state, run, calls, read))
          : this.preflight(state, run, calls, read);
        [, planned] = await Promise.all([started, pass1]);
        // A person's answers are kept, so a coordinator taking the round over does not ask again.
        if ((await this.gate(state, run, round, planned, controller.signal)) && owner)
          await this.store.saveDecisions(session, run, round, owner, planned.map(storedOf));
      }
      const results = await this.execute(state, run, round, planned, controller.signal, resume?.origin);
      const completed = { round, run };
      const commit = () =>
        storeRound({
          store: this.store,
          session,
          tenant: state.tenant,
          run,
          round,
          planned,
          results,
          owner,
          ...(this.store.appendsEvents ? { completed } : {}),
        });
      const committed = await (hooks?.pass ? hooks.pass('commit', ref, commit) : commit());
      // Another coordinator took the round over (this one was thought dead): its answer stands.
      if (!committed) return this.awaitRound(session, run, round);
      const ran = planned.filter((p) => p.decision.kind === 'run').map((p) => p.call.index);
      if (ran.length > 0) this.executor.committed?.(round, ran, resume?.origin);
      if (hooks?.result) for (const [i, r] of results.entries()) hooks.result(r, planned[i] as PlannedCall);
      // Once the commit (and the round's answer) is stored, its events: tool.result, then
      // round.completed (already appended by a store that appends events).
      if (!this.store.appendsEvents)
        await this.events.publishMany(session, [...committed, { name: 'round.completed', data: completed }]);
      return { round, results };
    };
    let done = false;
    try {
      const response = await (hooks?.round ? hooks.round({ ...ref, calls: rawCalls.length }, body) : body());
      done = true;
      return response;
    } finally {
      if (owner) {
        if (done) {
          this.stranded.delete(roundMember(ref));
          this.finished.push(ref);
        } else this.strand(ref);
      }
    }
  }

  /** A round of this coordinator that failed part way: kept on its list, and resumed later. */
  private strand(ref: RoundRef): void {
    const kept = this.stranded.get(roundMember(ref));
    if (kept) kept.retrying = false;
    else this.stranded.set(roundMember(ref), { ref, attempts: 0, retrying: false });
  }

  /**
   * Resumes stranded rounds, each at most MAX_ROUND_RETRIES times; then it is given up: marked
   * failed in the store (tried again at each tick until that is written), dropped, and said.
   */
  private retryStranded(): void {
    for (const [key, kept] of this.stranded) {
      if (kept.retrying) continue;
      if (++kept.attempts > MAX_ROUND_RETRIES) {
        kept.retrying = true;
        void this.giveUp(key, kept.ref);
        continue;
      }
      kept.retrying = true;
      void this.resumeRound(kept.ref, this.coordinatorId);
    }
  }

  private async giveUp(key: string, ref: RoundRef): Promise<void> {
    const { session, run, round } = ref;
    const why = `the round could not be finished: it failed ${MAX_ROUND_RETRIES + 1} times on coordinator ${this.coordinatorId}, so the outcome of its calls is unknown`;
    try {
      // false: no longer this coordinator's to end (taken over, or done); either way, not its to keep.
      await this.store.failRound(session, run, round, this.coordinatorId, why);
      this.stranded.delete(key);
      this.finished.push(ref);
      this.options.onError?.(
        new Error(`round ${round} (session ${session}) failed ${MAX_ROUND_RETRIES + 1} times; given up`),
      );
    } catch (e) {
      const kept = this.stranded.get(key);
      if (kept) kept.retrying = false;
      this.options.onError?.(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private restorePlanned(state: SessionState, stored: readonly StoredPlanned[]): PlannedCall[] {
    const specs = sessionSpecs(this.tools, state.clientTools);
    return stored.map((p) => ({ ...p, paths: p.paths, spec: specs.get(p.name) }));
  }

  /**
   * Starts this coordinator's heartbeat (its lease, renewed every third of it) and the takeover of
   * rounds whose coordinator stopped renewing (died): each is finished from what the store kept of
   * it. Calls keep their ids, so one already run is answered from its recorded outcome, and the
   * commit records each call once. Resolves after the first heartbeat (or its failure, reported
   * to onError and retried).
   */
  async startRecovery(intervalMs = Math.max(50, Math.floor(this.leaseMs / 3))): Promise<void> {
    const ledger = this.options.ledger;
    if (!ledger || this.recoveryTimer) return;
    // A first heartbeat that fails (Redis away) is retried by the timer; the coordinator still starts.
    await this.heartbeat(ledger).catch((e: unknown) =>
      this.options.onError?.(e instanceof Error ? e : new Error(String(e))),
    );
    let busy = false;
    this.recoveryTimer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.heartbeat(ledger)
        .then(() => {
          if (this.draining) return;
          this.retryStranded();
          return this.adoptLapsed(ledger);
        })
        .catch((e: unknown) => this.options.onError?.(e instanceof Error ? e : new Error(String(e))))
        .finally(() => {
          busy = false;
        });
    }, intervalMs);
    this.recoveryTimer.unref();
  }

  private async heartbeat(ledger: RoundLedger): Promise<void> {
    const finished = this.finished;
    this.finished = [];
    try {
      await ledger.heartbeat(this.coordinatorId, this.leaseMs, finished);
    } catch (e) {
      this.finished.push(...finished);
      throw e;
    }
  }

  private async adoptLapsed(ledger: RoundLedger): Promise<void> {
    for (;;) {
      const adopted = await ledger.adoptLapsed(this.coordinatorId, Date.now());
      if (!adopted) return;
      for (const ref of adopted.rounds) void this.resumeRound(ref, adopted.from);
    }
  }

  /** Finishes a round from what the store kept of it: one adopted from `from`, or a stranded one of this coordinator. */
  private async resumeRound(ref: RoundRef, from: string): Promise<void> {
    try {
      const [taken, state] = await Promise.all([
        this.store.takeRound(ref.session, ref.run, ref.round, this.coordinatorId),
        this.store.getSession(ref.session),
      ]);
      if (taken.kind !== 'taken' || !state) {
        this.stranded.delete(roundMember(ref));
        this.finished.push(ref);
        return;
      }
      this.options.onRecover?.(ref, { coordinator: from, decided: taken.planned !== undefined });
      const resume: Resume = { origin: taken.origin || from };
      if (taken.planned) resume.planned = taken.planned;
      // A failure strands the round again (runRound), for the next attempt.
      await this.track(ref.session, ref.run, (controller) =>
        this.runRound(state, ref, taken.calls, controller, resume),
      );
    } catch (e) {
      // takeRound or the session read failed (Redis away): tried again at the next tick.
      this.strand(ref);
      this.options.onError?.(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private async preflight(
    state: SessionState,
    run: string,
    calls: ReturnType<typeof normalizeCall>[],
    read: ReadAhead | undefined,
  ): Promise<PlannedCall[]> {
    const specs = sessionSpecs(this.tools, state.clientTools);
    const fetched = new Set(state.fetched);
    const before = new Set(fetched);
    const planned = await preflight(calls, {
      provider: state.provider,
      loaded: loadedSet(state.provider, specs, state.clientTools),
      fetched,
      specs,
      runnable: await this.runnable(state),
      autoApprove: state.autoApprove,
      ...(read ? { knownKeys: read.known } : {}),
      findDedupe: async (keys) =>
        read && keys.every((k) => read.asked.has(k)) ? read.dedupe : this.store.findDedupeMany(state.id, run, keys),
      findCached: (keys) => this.store.findCachedMany(state.tenant, keys),
    });
    const added = [...fetched].filter((n) => !before.has(n));
    if (added.length) await this.store.markFetched(state.id, added);
    return planned;
  }

  /**
   * DESIGN.md step 8: every confirmation of the round asked at once; nothing runs until all are
   * answered. True when anybody was asked.
   */
  private async gate(
    state: SessionState,
    run: string,
    round: string,
    planned: PlannedCall[],
    signal: AbortSignal,
  ): Promise<boolean> {
    const asking = planned.filter((p) => p.decision.kind === 'run' && p.decision.needsConfirm);
    if (asking.length === 0) return false;
    const items: PendingConfirmation[] = asking.map((p) => ({
      confirmationId: newId('cf'),
      session: state.id,
      round,
      run,
      callId: p.call.id,
      name: p.name,
      args: p.args,
      createdAt: Date.now(),
    }));
    const decided = this.confirmations.request(items, { timeoutMs: this.config.confirmTimeoutMs, signal });
    for (const item of items) {
      const { session: _s, createdAt: _c, ...data } = item;
      await this.events.publish(state.id, 'confirm.requested', data);
    }
    this.options.hooks?.confirmations?.(items.length);
    const decisions = await decided.finally(() => this.options.hooks?.confirmations?.(-items.length));
    asking.forEach((p, i) => {
      const d = decisions[i];
      if (!d || d.approve) return;
      const message =
        d.by === 'timeout'
          ? `Nobody approved ${p.name} within ${this.config.confirmTimeoutMs} ms, so it did not run.`
          : d.by === 'cancelled'
            ? `The run was cancelled while ${p.name} waited for approval; it did not run.`
            : `A person denied ${p.name}; it did not run. Do not retry it unchanged.`;
      const result: CallResult =
        d.by === 'cancelled'
          ? { id: p.call.id, name: p.name, status: 'error', error: { code: 'cancelled', message }, durationMs: 0 }
          : { id: p.call.id, name: p.name, status: 'denied', error: { code: 'denied', message }, durationMs: 0 };
      p.decision = { kind: 'done', result };
    });
    return true;
  }

  private async execute(
    state: SessionState,
    run: string,
    round: string,
    planned: PlannedCall[],
    signal: AbortSignal,
    origin: string | undefined,
  ): Promise<CallResult[]> {
    const toRun = planned.filter((p) => p.decision.kind === 'run');
    const ran = await executeCalls({
      calls: toRun,
      executor: this.executor,
      limiter: this.limiter,
      runKey: `${state.id}\u0000${run}`,
      signal,
      jobOf: (p): ExecJob => ({
        session: state.id,
        tenant: state.tenant,
        run,
        round,
        callId: p.call.id,
        callIndex: p.call.index,
        name: p.name,
        args: p.args,
        workspace: state.workspace,
        queue: p.spec?.concurrency === 'concurrent' ? 'concurrent' : 'serial',
        timeoutMs:
          typeof p.args.timeoutMs === 'number' && p.name === 'run_command'
            ? p.args.timeoutMs
            : (p.spec?.timeoutMs ?? 60_000),
        ...(origin ? { origin } : {}),
      }),
      ...(this.options.hooks?.execute ? { observe: this.options.hooks.execute } : {}),
    });
    const results: CallResult[] = [];
    for (const p of planned) {
      const d = p.decision;
      if (d.kind === 'done') results.push(d.result);
      else if (d.kind === 'run') results.push(ran.get(p.call.index) as CallResult);
      else results.push(followerResult(p, results[d.leader] as CallResult, round));
    }
    return results;
  }

  subscribe(
    session: string,
    lastEventId: string | undefined,
    onEvent: (e: DispatchEvent) => void,
  ): Promise<() => void> {
    return this.events.subscribe(session, lastEventId, onEvent);
  }

  async pendingConfirmations(session: string): Promise<PendingConfirmation[]> {
    await this.requireSession(session);
    return this.confirmations.pending(session);
  }

  async answerConfirmation(
    session: string,
    idOrCallId: string,
    decision: { approve: boolean; remember: boolean },
  ): Promise<PendingConfirmation> {
    await this.requireSession(session);
    const out = await this.confirmations.answer(session, idOrCallId, decision);
    if (out.kind === 'not_found')
      throw new RequestError('confirmation_not_found', `nothing is pending under ${idOrCallId} in session ${session}`);
    if (out.kind === 'ambiguous')
      throw new RequestError(
        'confirmation_ambiguous',
        `${out.count} pending confirmations have call id ${idOrCallId}; answer by confirmationId`,
      );
    if (decision.approve && decision.remember) {
      // "Allow for this session": auto-approve the tool and approve its other pending confirmations.
      await this.store.addAutoApprove(session, out.confirmation.name);
      for (const other of await this.confirmations.pending(session)) {
        if (other.name === out.confirmation.name)
          await this.confirmations.answer(session, other.confirmationId, decision);
      }
    }
    return out.confirmation;
  }

  async cancelRun(session: string, run: string): Promise<number> {
    await this.requireSession(session);
    const runKey = `${session}\u0000${run}`;
    const rounds = [...(this.active.get(runKey) ?? [])];
    for (const r of rounds) r.controller.abort(new Error('run cancelled'));
    this.runs.get(runKey)?.abort(new Error('run cancelled'));
    const settled = await Promise.allSettled(rounds.map((r) => r.promise));
    let n = 0;
    for (const s of settled) {
      if (s.status === 'fulfilled')
        n += s.value.results.filter((x) => x.status === 'error' && x.error?.code === 'cancelled').length;
    }
    return n;
  }

  async history(session: string, tool?: string): Promise<HistoryEntry[]> {
    await this.requireSession(session);
    return this.store.history(session, tool);
  }

  async catalog(): Promise<CatalogView[]> {
    return this.tools.all().map((s) => ({
      name: s.name,
      description: s.description,
      concurrency: s.concurrency,
      confirm: s.confirm,
      deferred: s.deferred,
      cacheable: s.cacheable,
      parameters: s.parameters,
    }));
  }

  async ready(): Promise<boolean> {
    if (!(await this.store.ping().catch(() => false))) return false;
    if (this.options.workersAlive) return (await this.options.workersAlive().catch(() => 0)) > 0;
    return true;
  }

  inFlightRounds(): number {
    return this.inFlight;
  }

  /** Stops taking rounds (new ones get `shutting_down`) and waits for the in-flight ones. */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.idle.delete(done);
        resolve();
      };
      this.idle.add(done);
    });
  }

  /** Closes the confirmations, executor, events and store (after `drain`). */
  async close(): Promise<void> {
    this.draining = true;
    clearInterval(this.recoveryTimer);
    // Every round is finished (drained): off the coordinators' lists, so nobody adopts an empty one.
    // Rounds that failed part way stay listed: another coordinator adopts them once this lease lapses.
    const ledger = this.options.ledger;
    if (ledger && this.stranded.size === 0) await settleWithin(ledger.leave(this.coordinatorId), 1_000);
    await this.confirmations.close();
    await this.executor.close();
    await this.events.close();
    await this.store.close();
  }
}

/** The `round.started` data: the round, its run, and each call's id and tool name (run_tool unwrapped). */
function startedData(ref: RoundRef, calls: readonly NormalCall[]): Record<string, unknown> {
  return {
    round: ref.round,
    run: ref.run,
    calls: calls.map((c) => ({
      id: c.id,
      name: c.name === 'run_tool' && typeof c.args?.name === 'string' ? c.args.name : c.name,
    })),
  };
}

/** A pass-1 decision as the ledger stores it (the spec is re-read from the catalog on resume). */
function storedOf(p: PlannedCall): StoredPlanned {
  const { spec: _spec, paths, ...rest } = p;
  return paths ? { ...rest, paths } : rest;
}

function sessionNotFound(session: string): RequestError {
  return new RequestError(
    'session_not_found',
    `session ${session} does not exist; create it with PUT /v1/sessions/${session}`,
  );
}

/** A repeat of an earlier call of the same round: deduped when the first is ok, else the first's outcome. */
function followerResult(p: PlannedCall, leader: CallResult, round: string): CallResult {
  if (leader.status === 'ok' || leader.status === 'deduped' || leader.status === 'cached') {
    return {
      id: p.call.id,
      name: p.name,
      status: 'deduped',
      output: leader.output,
      dedupedFrom: leader.status === 'deduped' && leader.dedupedFrom ? leader.dedupedFrom : leader.id,
      dedupedFromRound: leader.status === 'deduped' && leader.dedupedFromRound ? leader.dedupedFromRound : round,
      durationMs: 0,
    };
  }
  const copy: CallResult = { id: p.call.id, name: p.name, status: leader.status, durationMs: 0 };
  if (leader.error) copy.error = leader.error;
  if (leader.output !== undefined) copy.output = leader.output;
  return copy;
}
