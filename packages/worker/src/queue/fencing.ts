import { type ExecJob, type ExecOutcome, failedOutcome } from '@tool-dispatch/shared';
import { isRedisRefusal } from '@tool-dispatch/shared/redis';
import type { Job, Worker } from 'bullmq';
import { FencedAbort, isFenced } from '../support/fenced.js';

/**
 * Self-fencing (docs/operations.md, "Partitions: a worker cut off from Redis"). A job's lock is
 * the worker's hold on its calls: once it lapses (lockDuration after the last renewal Redis
 * applied) a stalled check may fail the job, the call is answered worker_lost, and the run's next
 * serial call may start elsewhere. A worker that cannot renew the lock stops the job's calls
 * itself, sandbox killed, well before that: `fenceAfterMs` after the send of its last renewal
 * that succeeded (a renewal sent at S is applied after S, so the lock lasts at least until
 * S + lockDuration by Redis's clock). Renewals go every `renewEveryMs`. A refused renewal fences
 * at once only when Redis still has the job (see JobKnown): after an empty Redis restart nobody can
 * take the job again, and the call in flight finishes and is reported (issue #43).
 */
export interface FenceTiming {
  /** BullMQ's lockRenewTime: a tracked job's lock is extended about this often. */
  readonly renewEveryMs: number;
  /** A job whose lock went this long without a renewal that succeeded is stopped here. */
  readonly fenceAfterMs: number;
  /** How often the fence looks. */
  readonly checkEveryMs: number;
}

/** lockDuration 5 s (JOB_LOCK_MS): renewals every 1 s, fenced at 2.5 s, checked every 100 ms. */
export function fenceTimingOf(lockDurationMs: number): FenceTiming {
  return {
    renewEveryMs: Math.max(10, Math.floor(lockDurationMs / 5)),
    fenceAfterMs: Math.floor(lockDurationMs / 2),
    checkEveryMs: Math.max(10, Math.min(100, Math.floor(lockDurationMs / 50))),
  };
}

interface Held {
  /** performance.now() of the send of the last renewal that succeeded (or of the job's take). */
  renewedAt: number;
  stop: AbortController;
}

/**
 * Whether Redis still has a job (its hash), asked after Redis refused to renew its lock. A job it
 * has whose lock is not ours was failed as stalled, moved back to wait, or taken by another
 * worker: someone else may act on it now. A job it does not have (Redis restarted empty, or the
 * job was removed) nobody can take again: the refusal is harmless, and Redis answered.
 */
export type JobKnown = (jobId: string) => Promise<boolean>;

/**
 * The fence of one BullMQ worker (a consumer): it learns each renewal's outcome by wrapping the
 * worker's `extendJobLocks` (BullMQ's LockManager renews every tracked job's lock through it) and
 * stops a job whose hold went `fenceAfterMs` without a renewal that succeeded. A renewal Redis
 * refuses (the lock key is gone or another's) fences the job at once only if Redis still has the
 * job (`known`): then the lock lapsed and another worker, or the coordinator's verdict, may take
 * its place. A refusal for a job Redis no longer has (an empty restart) counts as a renewal: nobody
 * can take that job again, and the coordinator's safety net waits out the call's own deadline.
 */
export class JobFence {
  private readonly held = new Map<string, Held>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timing: FenceTiming,
    private readonly known: JobKnown,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Wraps `worker.extendJobLocks` so that each renewal's result reaches the fence. */
  watch(worker: Worker): void {
    const extend = worker.extendJobLocks.bind(worker);
    worker.extendJobLocks = async (jobIds, tokens, duration) => {
      const sentAt = this.now();
      const refused = await extend(jobIds, tokens, duration);
      await Promise.all(jobIds.map((id) => this.renewed(id, sentAt, refused.includes(id))));
      return refused;
    };
  }

  /** One job's renewal, sent at `sentAt`, applied or refused. */
  private async renewed(id: string, sentAt: number, refused: boolean): Promise<void> {
    const held = this.held.get(id);
    if (!held) return;
    // Not known yet (Redis unreachable again): neither a renewal nor a fence; the deadline decides.
    const taken = refused ? await this.known(id).catch(() => undefined) : false;
    if (taken === undefined) return;
    if (taken) this.fence(id, held, 'Redis refused to renew its lock and still has the job (failed, moved or taken)');
    else held.renewedAt = Math.max(held.renewedAt, sentAt);
  }

  /**
   * Holds a job from its take: the lock was set when Redis moved it to active, after the worker
   * sent the move (`processedOn`, the worker's own clock). Returns the signal the fence aborts.
   */
  track(job: Job): AbortSignal {
    const sinceTake = job.processedOn === undefined ? 0 : Math.max(0, Date.now() - job.processedOn);
    const stop = new AbortController();
    if (job.id !== undefined) this.held.set(job.id, { renewedAt: this.now() - sinceTake, stop });
    this.timer ??= setInterval(() => this.check(), this.timing.checkEveryMs);
    return stop.signal;
  }

  untrack(job: Job): void {
    if (job.id !== undefined) this.held.delete(job.id);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.held.clear();
  }

  private check(): void {
    const now = this.now();
    for (const [id, held] of this.held) {
      const unrenewed = now - held.renewedAt;
      if (unrenewed > this.timing.fenceAfterMs)
        this.fence(id, held, `its lock went ${Math.round(unrenewed)} ms without a renewal (Redis unreachable)`);
    }
  }

  private fence(id: string, held: Held, why: string): void {
    if (held.stop.signal.aborted) return;
    const unrenewed = Math.round(this.now() - held.renewedAt);
    held.stop.abort(new FencedAbort(`the worker lost its hold on job ${id}: ${why}`, unrenewed));
  }
}

/**
 * A call stopped by its fence ends worker_lost, outcome unknown: it was killed part way, before
 * anyone else could take its place. Any other outcome stands.
 */
export function fencedOutcome(
  signal: AbortSignal,
  outcome: ExecOutcome,
  job: Pick<ExecJob, 'name' | 'queue'>,
): ExecOutcome {
  if (!isFenced(signal.reason)) return outcome;
  // A serial call is never run again; a read's stalled job may run again elsewhere (first outcome wins).
  const rerun = job.queue === 'serial' ? 'it was not re-run' : 'it is run again only if its job was redelivered first';
  const why = `${job.name}: ${signal.reason.message}; it was stopped here (its sandbox killed) before another worker could take its place; the outcome is unknown and ${rerun}`;
  return failedOutcome('worker_died', why, outcome.durationMs ?? 0, { ranOn: outcome.ranOn });
}

/** How long a fenced call's report is sent again while Redis stays out of reach. */
const FENCED_REPORT_PATIENCE_MS = 10 * 60_000;

/**
 * Sends a report again while Redis refuses or times it out, for up to 10 minutes (a fenced
 * worker's report waits for the partition to heal; the reporter itself gives up sooner).
 */
export async function reportWhenReachable(send: () => Promise<void>, retryMs = 1_000): Promise<void> {
  const until = Date.now() + FENCED_REPORT_PATIENCE_MS;
  for (;;) {
    try {
      return await send();
    } catch (e) {
      if (!isRedisRefusal(e) || Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, retryMs));
    }
  }
}
