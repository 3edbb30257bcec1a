import { setMaxListeners } from 'node:events';
import { type DispatchConfig, type Executor, newId, type ToolDefinition } from '@tool-dispatch/shared';
import type { ConfirmAnswer, ConfirmHub, PendingConfirmation } from './confirm/confirm-hub.js';
import type { CatalogView, Dispatcher } from './dispatcher.js';
import type { DispatchEvent, EventBus } from './events/event-bus.js';
import type { CallProgress } from './executors/call-progress.js';
import type { InboxFeed } from './inbox/inbox-feed.js';
import type { InputHub } from './inputs/input-hub.js';
import type { RoundLedger, RunCancelBus } from './ledger/round-ledger.js';
import type { Limits } from './limits/limits.js';
import type {
  AsyncRoundReply,
  Grant,
  HistoryEntry,
  InboxChange,
  InboxItem,
  InputAnswer,
  ParkedInput,
  RoundHooks,
  RoundRef,
  RoundResponse,
  SessionInput,
  SessionState,
  SubmitRoundInput,
  ToolsView,
} from './model.js';
import { catalogView, syncCatalog } from './passes/catalog-sync.js';
import { answerConfirmation, confirmationAnswered } from './passes/gate.js';
import { announcedHubs, waitingItems } from './passes/inbox-signals.js';
import { answerInput, inputAnswered } from './passes/park.js';
import { runnableTools } from './passes/preflight.js';
import { RequestError } from './request-error.js';
import type { RoundAdmission } from './round/admission.js';
import { type AsyncRoundDeps, submitRoundAsync } from './round/async-round.js';
import { putSession } from './round/put-session.js';
import { DEFAULT_LEASE_MS, type RoundRecovery } from './round/recovery.js';
import { totalCancelled } from './round/round-cancels.js';
import { roundView } from './round/round-view.js';
import { roundsOf } from './round/rounds-of.js';
import { type RoundsDeps, sessionNotFound, submitRound } from './round/submit-round.js';
import { Catalog, sessionSpecs } from './rules/catalog.js';
import type { NamedLimits } from './rules/named-limits.js';
import { buildToolsView, loadingOf } from './rules/session-view.js';
import type { Store } from './store/store.js';

export { MAX_ROUND_RETRIES } from './round/recovery.js';

/**
 * How long a drain (SIGTERM) waits for parked calls to be answered before it lets go of them:
 * shared (Redis), they stay parked for another coordinator; embedded, they end `cancelled`.
 */
export const PARKED_DRAIN_GRACE_MS = 2_000;

/** The engine's seams and settings; `app/` picks the implementations (memory or Redis, local or queue). */
export interface EngineOptions {
  config: DispatchConfig;
  /** Pass 2's seam; embedded mode passes a LocalExecutor, distributed mode a QueueExecutor. */
  executor: Executor;
  store: Store;
  events: EventBus;
  confirmations: ConfirmHub;
  /** Where parked calls (interactive and client tools) wait for their answers. */
  inputs: InputHub;
  /** What `/inbox` hears of confirmations and parked calls across sessions; none: the inbox lists nothing. */
  inboxFeed?: InboxFeed;
  /** Where a run's places and serial lane are counted: MemoryLimits embedded, RedisLimits shared by every coordinator. */
  limits: Limits;
  /** TD_LIMITS: limits per tool, MCP server and tenant, admitted through `limits` after a call's run places. */
  namedLimits?: NamedLimits;
  catalog?: Catalog;
  /** User tools' definitions (their handlers live on the executor's side). */
  tools?: readonly ToolDefinition[];
  /** Workers alive (distributed mode); readiness needs at least one. */
  workersAlive?: () => Promise<number>;
  hooks?: EngineHooks;
  /** Coordinator leases and round lists, so another coordinator can finish the rounds of one that died. */
  ledger?: RoundLedger;
  /** A run's cancel heard by every coordinator (distributed mode): DELETE reaches rounds running on any of them. */
  runCancels?: RunCancelBus;
  /** This coordinator's id, as lease owner (default: a fresh id). */
  coordinatorId?: string;
  /** How long this coordinator's lease lasts without a heartbeat (default 5 s); its rounds are taken over after. */
  leaseMs?: number;
  /** Infrastructure errors the engine recovers from (recovery scans). */
  onError?: (error: Error) => void;
  /** Operator log lines (an announced MCP tool the catalog refused). */
  log?: (line: string) => void;
  /** A round taken over from a coordinator that stopped renewing its lease. */
  onRecover?: (ref: RoundRef, from: { coordinator: string; decided: boolean }) => void;
  /** (v1.3) Where the executor's calls are (`getRound`'s call states): the LocalExecutor embedded, outcome hashes distributed. */
  callProgress?: CallProgress;
}

/** Observation points for tracing and metrics; all optional. */
export type EngineHooks = RoundHooks;

/**
 * The coordinator's engine (the Dispatcher): a facade over the rounds (`round/`: submit, run
 * through the passes, recovery, active runs) and the seams, plus the session admin the HTTP API needs.
 */
export class Engine implements Dispatcher {
  readonly config: DispatchConfig;
  readonly store: Store;
  readonly events: EventBus;
  readonly confirmations: ConfirmHub;
  readonly inputs: InputHub;
  readonly tools: Catalog;
  readonly executor: Executor;
  readonly coordinatorId: string;
  readonly leaseMs: number;
  private readonly rounds: RoundsDeps;
  private readonly recovery: RoundRecovery | undefined;
  private draining = false;
  private readonly admission: RoundAdmission;
  /** (v1.3) Rounds that outlive their request: their views, waits and own cancels. */
  private readonly asyncRounds: AsyncRoundDeps;
  /** Aborted once a drain's grace has passed: parked calls' waits let go. */
  private readonly parkRelease = new AbortController();
  private readonly log: (line: string) => void;

  constructor(private readonly options: EngineOptions) {
    const { config, executor, store, events, inboxFeed } = options;
    // Every ask and answer, whichever way it comes (API, MCP client, grant, timeout), is announced to the inbox.
    const { confirmations, inputs } = announcedHubs(options, inboxFeed, config.confirmTimeoutMs);
    this.config = config;
    this.executor = executor;
    this.store = store;
    this.events = events;
    this.confirmations = confirmations;
    this.inputs = inputs;
    // Every parked call of every run listens to it.
    setMaxListeners(0, this.parkRelease.signal);
    this.log = options.log ?? (() => {});
    this.tools = options.catalog ?? new Catalog();
    for (const def of options.tools ?? []) this.tools.register(def);
    this.coordinatorId = options.coordinatorId ?? newId('coord');
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    ({
      rounds: this.rounds,
      admission: this.admission,
      asyncRounds: this.asyncRounds,
    } = roundsOf({
      ...options,
      confirmations,
      inputs,
      catalog: this.tools,
      coordinatorId: this.coordinatorId,
      leaseMs: this.leaseMs,
      parkRelease: this.parkRelease.signal,
      isDraining: () => this.draining,
      syncCatalog: () => this.syncCatalog(),
    }));
    this.recovery = this.rounds.recovery;
  }

  async putSession(session: string, input: SessionInput): Promise<SessionState> {
    await this.syncCatalog();
    const { workspaceRoot, resultBudget: budgetDefaults } = this.config;
    return putSession({ store: this.store, catalog: this.tools, workspaceRoot, budgetDefaults }, session, input);
  }

  getSession(session: string): Promise<SessionState | null> {
    return this.store.getSession(session);
  }

  async toolsFor(session: string): Promise<ToolsView> {
    const [state] = await Promise.all([this.requireSession(session), this.syncCatalog()]);
    const specs = sessionSpecs(this.tools, state.clientTools);
    const runnable = await runnableTools(this.executor, state);
    return buildToolsView(loadingOf(state), specs, runnable, new Set(state.fetched), state.toolSearch);
  }

  async submitRound(input: SubmitRoundInput): Promise<RoundResponse> {
    if (this.draining)
      throw new RequestError('shutting_down', 'the coordinator is shutting down; retry on another one');
    // Past TD_MAX_ROUNDS_IN_FLIGHT, the round waits for its turn here, before anything of it begins.
    const release = await this.admission.admit();
    try {
      await this.syncCatalog();
      return await submitRound(this.rounds, input);
    } finally {
      release();
    }
  }

  async submitRoundAsync(input: SubmitRoundInput): Promise<AsyncRoundReply> {
    if (this.draining)
      throw new RequestError('shutting_down', 'the coordinator is shutting down; retry on another one');
    await this.syncCatalog();
    return submitRoundAsync(this.asyncRounds, input);
  }

  getRound(session: string, run: string, round: string, opts?: { waitMs?: number; signal?: AbortSignal }) {
    return roundView(this.asyncRounds.views, { session, run, round }, opts);
  }

  async cancelRound(session: string, run: string, round: string): Promise<number> {
    await this.requireSession(session);
    const elsewhere = this.options.runCancels?.cancelElsewhere(session, run, round);
    return totalCancelled(this.asyncRounds.cancels.cancel({ session, run, round }), elsewhere);
  }

  /**
   * Starts the heartbeat and the takeover of dead coordinators' rounds (distributed mode; see
   * RoundRecovery), and hearing the cancels other coordinators are sent for this one's rounds.
   */
  async startRecovery(intervalMs?: number): Promise<void> {
    await this.options.runCancels?.start((session, run, round) =>
      round ? this.asyncRounds.cancels.cancel({ session, run, round }) : this.rounds.runs.cancel(session, run),
    );
    await this.recovery?.start(intervalMs);
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
    decision: ConfirmAnswer,
  ): Promise<PendingConfirmation & { grant?: Grant }> {
    await this.requireSession(session);
    const out = await answerConfirmation(this.rounds.deps, session, idOrCallId, decision);
    const confirmation = confirmationAnswered(out, session, idOrCallId);
    return out.kind === 'answered' && out.grant ? { ...confirmation, grant: out.grant } : confirmation;
  }

  async grants(session: string): Promise<Grant[]> {
    await this.requireSession(session);
    return this.store.listGrants(session);
  }

  async revokeGrant(session: string, grantId: string, by: string): Promise<void> {
    await this.requireSession(session);
    if (!(await this.store.revokeGrant(session, grantId)))
      throw new RequestError('grant_not_found', `session ${session} has no grant ${grantId}`);
    await this.events.publish(session, 'grant.revoked', { grantId, by });
    this.options.hooks?.grants?.('revoked');
  }

  async pendingInputs(session: string): Promise<ParkedInput[]> {
    await this.requireSession(session);
    return this.inputs.pending(session);
  }

  async answerInput(
    session: string,
    idOrCallId: string,
    answer: InputAnswer,
  ): Promise<{ inputId: string; status: 'ok' | 'error' }> {
    await this.requireSession(session);
    return inputAnswered(await answerInput(this.inputs, session, idOrCallId, answer), session, idOrCallId);
  }

  async inboxSessions(): Promise<string[]> {
    return (await this.options.inboxFeed?.sessions(Date.now())) ?? [];
  }

  inboxItems(session: string): Promise<InboxItem[]> {
    return waitingItems(this, session, this.config.confirmTimeoutMs);
  }

  async watchInbox(onChange: (change: InboxChange) => void): Promise<() => void> {
    return (await this.options.inboxFeed?.watch(onChange)) ?? (() => {});
  }

  async cancelRun(session: string, run: string): Promise<number> {
    await this.requireSession(session);
    const elsewhere = this.options.runCancels?.cancelElsewhere(session, run);
    return totalCancelled(this.rounds.runs.cancel(session, run), elsewhere);
  }

  /** API.md's `{round, run, at, ...Result}` per entry (the paths kept for file_history stay inside). */
  async history(session: string, tool?: string): Promise<HistoryEntry[]> {
    await this.requireSession(session);
    return (await this.store.history(session, tool)).map(({ paths: _paths, ...entry }) => entry);
  }

  /** The catalog less the tools nothing can run (DESIGN.md pass 1 step 5: as if they had no definition). */
  async catalog(): Promise<CatalogView[]> {
    await this.syncCatalog();
    return catalogView(this.executor, this.tools);
  }

  /** The workers' announced tools into the catalog, waited for a while at most (see `syncCatalog`). */
  private syncCatalog(): Promise<void> {
    return syncCatalog(this.executor, this.tools, this.log);
  }

  async ready(): Promise<boolean> {
    if (!(await this.store.ping().catch(() => false))) return false;
    if (this.options.workersAlive) return (await this.options.workersAlive().catch(() => 0)) > 0;
    return true;
  }

  inFlightRounds(): number {
    return this.rounds.runs.size;
  }

  /**
   * Stops taking rounds (new ones get `shutting_down`) and waits for the in-flight ones; parked
   * calls only for PARKED_DRAIN_GRACE_MS: then their waits let go (see `parkCall`).
   */
  async drain(graceMs = PARKED_DRAIN_GRACE_MS): Promise<void> {
    this.draining = true;
    const release = this.parkRelease;
    const grace = setTimeout(function releaseParkedCalls() {
      release.abort();
    }, graceMs);
    try {
      await this.rounds.runs.whenIdle();
    } finally {
      clearTimeout(grace);
      release.abort();
    }
  }

  /** Closes the recovery, confirmations, parked calls' waits, executor, events and store (after `drain`). */
  async close(): Promise<void> {
    this.draining = true;
    await this.recovery?.stop();
    await this.options.runCancels?.close();
    await this.confirmations.close();
    this.parkRelease.abort();
    await this.inputs.close();
    await this.options.limits.close();
    await this.executor.close();
    await this.events.close();
    await this.options.inboxFeed?.close();
    await this.store.close();
  }

  private async requireSession(session: string): Promise<SessionState> {
    const s = await this.store.getSession(session);
    if (!s) throw sessionNotFound(session);
    return s;
  }
}
