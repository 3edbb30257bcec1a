import type { RoundLedger } from '../ledger/round-ledger.js';
import { roundMember } from '../ledger/round-ledger.js';
import type { RoundRef, SessionState } from '../model.js';
import type { Store, TakenRound } from '../store/store.js';
import { settleWithin } from '../support/settle.js';

/**
 * How often a round of this coordinator that failed part way is resumed before it is given up
 * (marked failed, so a retry under its Idempotency-Key hears so instead of waiting).
 */
export const MAX_ROUND_RETRIES = 5;
/** How long a coordinator's lease lasts without a heartbeat, unless told otherwise; its rounds are taken over after. */
export const DEFAULT_LEASE_MS = 5_000;
/** How long a round must stay on no coordinator's list before a retry waiting for it takes it over. */
export const ORPHAN_CONFIRM_MS = 1_000;
/** How long a leaving coordinator waits to take itself off the ledger. */
const LEAVE_WAIT_MS = 1_000;

export interface RecoveryOptions {
  ledger: RoundLedger;
  store: Store;
  /** This coordinator, as lease and round owner. */
  coordinatorId: string;
  leaseMs: number;
  /** Runs a round this coordinator now owns (taken over, or its own stranded one) through the passes. */
  resume(
    ref: RoundRef,
    state: SessionState,
    taken: Extract<TakenRound, { kind: 'taken' }>,
    from: string,
  ): Promise<unknown>;
  /** True once the coordinator drains: no more takeovers nor retries. */
  isDraining(): boolean;
  /** Infrastructure errors recovered from (the recovery scans). */
  onError?: ((error: Error) => void) | undefined;
  /** A round taken over from a coordinator that stopped renewing its lease. */
  onRecover?: ((ref: RoundRef, from: { coordinator: string; decided: boolean }) => void) | undefined;
}

/**
 * Leases, takeover and retries (DESIGN.md distributed shape): this coordinator's heartbeat, the
 * takeover of rounds whose coordinator stopped renewing its lease (died), and the resumption of
 * its own rounds that failed part way (Redis away, say), each at most MAX_ROUND_RETRIES times.
 */
export class RoundRecovery {
  private timer: NodeJS.Timeout | undefined;
  /** Rounds finished since the last heartbeat, which takes them off this coordinator's list. */
  private finished: RoundRef[] = [];
  /** This coordinator's rounds that failed part way: resumed by the timer. */
  private readonly stranded = new Map<string, { ref: RoundRef; attempts: number; retrying: boolean }>();

  constructor(private readonly options: RecoveryOptions) {}

  get owner(): string {
    return this.options.coordinatorId;
  }

  /** Lists a round under this coordinator before it begins, so another finds it if this one dies. */
  track(ref: RoundRef): Promise<void> {
    return this.options.ledger.track(ref, this.options.coordinatorId);
  }

  /**
   * A round whose beginning failed with its outcome unknown: Redis may have stored it and lost
   * only the reply (a connection dropped mid-command). Stranded, it is resumed by the timer if it
   * was stored (else nobody would run it, and a retry under its key would wait for it forever),
   * and forgotten if it was not.
   */
  unsure(ref: RoundRef): void {
    this.strand(ref);
  }

  /**
   * A round a retry waits for that is still running under `owner` but on nobody's list: its
   * coordinator gave it up (its begin or commit went unacknowledged by the replicas, or timed out
   * and landed later) and will not finish it. Checked twice, `ORPHAN_CONFIRM_MS` apart, with the
   * owner unchanged (a takeover under way moves it), then taken over here like a dead
   * coordinator's round. True when it was taken over.
   */
  async adoptOrphan(ref: RoundRef, owner: string): Promise<boolean> {
    const { ledger } = this.options;
    if (await ledger.isListed(ref, owner)) return false;
    await new Promise((r) => setTimeout(r, ORPHAN_CONFIRM_MS));
    const again = await this.options.store.getRound(ref.session, ref.run, ref.round);
    if (again?.state !== 'running' || again.owner !== owner || (await ledger.isListed(ref, owner))) return false;
    await ledger.track(ref, this.options.coordinatorId);
    this.options.onRecover?.(ref, { coordinator: owner, decided: false });
    await this.resumeRound(ref, owner);
    return true;
  }

  /** A round that needs no more of this coordinator (answered from the store, or done): off its list at the next heartbeat. */
  release(ref: RoundRef): void {
    this.finished.push(ref);
  }

  /** Runs a round this coordinator owns: finished, it leaves the list; failed part way, it is stranded for a retry. */
  async guard<T>(ref: RoundRef, round: () => Promise<T>): Promise<T> {
    let done = false;
    try {
      const out = await round();
      done = true;
      return out;
    } finally {
      if (done) {
        this.stranded.delete(roundMember(ref));
        this.finished.push(ref);
      } else this.strand(ref);
    }
  }

  /**
   * Starts the heartbeat (the lease, renewed every third of it) and the takeover of rounds whose
   * coordinator stopped renewing: each is finished from what the store kept of it. Calls keep
   * their ids, so one already run is answered from its recorded outcome, and the commit records
   * each call once. Resolves after the first heartbeat (or its failure, reported and retried).
   */
  async start(intervalMs = Math.max(50, Math.floor(this.options.leaseMs / 3))): Promise<void> {
    if (this.timer) return;
    // A first heartbeat that fails (Redis away) is retried by the timer; the coordinator still starts.
    await this.heartbeat().catch((e: unknown) => this.report(e));
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.tick()
        .catch((e: unknown) => this.report(e))
        .finally(() => {
          busy = false;
        });
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; with no round stranded, takes this coordinator off the ledger (nobody adopts an empty list). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    // Rounds that failed part way stay listed: another coordinator adopts them once this lease lapses.
    if (this.stranded.size === 0)
      await settleWithin(this.options.ledger.leave(this.options.coordinatorId), LEAVE_WAIT_MS);
  }

  private async tick(): Promise<void> {
    await this.heartbeat();
    if (this.options.isDraining()) return;
    this.retryStranded();
    await this.adoptLapsed();
  }

  private async heartbeat(): Promise<void> {
    const finished = this.finished;
    this.finished = [];
    try {
      await this.options.ledger.heartbeat(this.options.coordinatorId, this.options.leaseMs, finished);
    } catch (e) {
      this.finished.push(...finished);
      throw e;
    }
  }

  private async adoptLapsed(): Promise<void> {
    for (;;) {
      const adopted = await this.options.ledger.adoptLapsed(this.options.coordinatorId, Date.now());
      if (!adopted) return;
      for (const ref of adopted.rounds) void this.resumeRound(ref, adopted.from);
    }
  }

  /** A round of this coordinator that failed part way: kept on its list, and resumed later. */
  private strand(ref: RoundRef): void {
    const key = roundMember(ref);
    const kept = this.stranded.get(key);
    if (kept) kept.retrying = false;
    else this.stranded.set(key, { ref, attempts: 0, retrying: false });
  }

  /**
   * Resumes stranded rounds, each at most MAX_ROUND_RETRIES times; then it is given up: marked
   * failed in the store (tried again at each tick until that is written), dropped, and said.
   */
  private retryStranded(): void {
    for (const [key, kept] of this.stranded) {
      if (kept.retrying) continue;
      kept.retrying = true;
      if (++kept.attempts > MAX_ROUND_RETRIES) void this.giveUp(key, kept.ref);
      else void this.resumeRound(kept.ref, this.options.coordinatorId);
    }
  }

  private async giveUp(key: string, ref: RoundRef): Promise<void> {
    const { session, run, round } = ref;
    const me = this.options.coordinatorId;
    const why = `the round could not be finished: it failed ${MAX_ROUND_RETRIES + 1} times on coordinator ${me}, so the outcome of its calls is unknown`;
    try {
      // false: no longer this coordinator's to end (taken over, or done); either way, not its to keep.
      await this.options.store.failRound(session, run, round, me, why);
      this.stranded.delete(key);
      this.finished.push(ref);
      this.report(new Error(`round ${round} (session ${session}) failed ${MAX_ROUND_RETRIES + 1} times; given up`));
    } catch (e) {
      const kept = this.stranded.get(key);
      if (kept) kept.retrying = false;
      this.report(e);
    }
  }

  /** Finishes a round from what the store kept of it: one adopted from `from`, or a stranded one of this coordinator. */
  private async resumeRound(ref: RoundRef, from: string): Promise<void> {
    const { store } = this.options;
    try {
      const [taken, state] = await Promise.all([
        store.takeRound(ref.session, ref.run, ref.round, this.options.coordinatorId),
        store.getSession(ref.session),
      ]);
      if (taken.kind !== 'taken' || !state) {
        this.stranded.delete(roundMember(ref));
        this.finished.push(ref);
        return;
      }
      this.options.onRecover?.(ref, { coordinator: from, decided: taken.planned !== undefined });
      // A failure strands the round again (guard), for the next attempt.
      await this.options.resume(ref, state, taken, from);
    } catch (e) {
      // takeRound or the session read failed (Redis away): tried again at the next tick.
      this.strand(ref);
      this.report(e);
    }
  }

  private report(e: unknown): void {
    this.options.onError?.(e instanceof Error ? e : new Error(String(e)));
  }
}
