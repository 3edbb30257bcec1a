import { type ExecOutcome, type QueueClass, SETTLE_GRACE_MS } from '@tool-dispatch/shared';
import {
  failedJobVerdict,
  MAX_STALLED,
  parseOutcome,
  type RedisClient,
  type RedisKeys,
  RUNNING_MARK,
  readOutcomes,
  tryParseJson,
  workerLostOutcome,
} from '@tool-dispatch/shared/redis';
import type { Job, Queue } from 'bullmq';
import { MAX_RESENDS, notStarted, type Pending } from './pending.js';
import { standingOutcome } from './verdicts.js';

/** What the safety net needs: Redis, the queues, which calls still wait, and how long past a deadline to wait. */
export interface LookUpContext {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  queueOf(cls: QueueClass, shard: number): Queue;
  /** Whether `call` still waits here (not answered, not cancelled). */
  isWaiting(call: Pending): boolean;
  /** How long past a call's deadline (and the worker's settle grace) before deciding for itself. */
  readonly overdueGraceMs: number;
  /** QueueExecutorOptions.resendLostJobs: a vanished job whose calls never started is enqueued again. */
  readonly resendLostJobs: boolean;
}

/** The safety net's verdict: the call's outcome, `RESEND` (its job was lost before it started), or undefined (wait on). */
export const RESEND = 'resend';
export type LookUpVerdict = ExecOutcome | typeof RESEND | undefined;

/**
 * The safety net's look at one waiting call: its outcome field, then the job carrying it. Returns
 * the call's outcome when one is found or due (a failed job's verdict, a job that vanished, a job
 * nobody took within the deadlines, a worker that never reported), `RESEND` when its job vanished
 * before it started (lostBeforeStart), else undefined (wait on).
 */
export async function lookUpPending(context: LookUpContext, entry: Pending, now: number): Promise<LookUpVerdict> {
  const [value = null] = await readOutcomes(context.redis, context.keys, entry.origin, [entry.callId]);
  const recorded = parseOutcome(tryParseJson(value));
  if (recorded) return recorded;
  const verdict = await verdictOn(context, entry, now, value);
  // A verdict is recorded before it is the answer, so a worker's late report of the call is refused.
  return verdict && verdict !== RESEND ? standingOutcome(context, entry, verdict) : verdict;
}

/** The safety net's own verdict on a call with no outcome recorded (its outcome field holds `value`). */
async function verdictOn(context: LookUpContext, entry: Pending, now: number, value: string | null) {
  const { job, callId } = entry;
  // The job running the call names itself in the outcome field; before it starts, the job we enqueued.
  const carrierId = value?.startsWith(RUNNING_MARK) ? value.slice(RUNNING_MARK.length) : (entry.carrier?.id ?? callId);
  const queue = context.queueOf(job.queue, entry.shard);
  const bullJob = (await queue.getJob(carrierId)) as Job | undefined;
  const elapsed = now - entry.enqueuedAt;
  if (bullJob?.finishedOn) {
    if (bullJob.failedReason) return failedJobVerdict(job, bullJob.failedReason, elapsed);
    const returned = parseOutcome((bullJob.returnvalue as Record<string, unknown> | null)?.[callId]);
    if (returned) return returned;
  }
  // A call waiting for a person's answer is not overdue; the time its questions took is not its own.
  if (entry.asking > 0) return undefined;
  const perAttemptMs = job.timeoutMs + entry.askedMs + SETTLE_GRACE_MS + context.overdueGraceMs;
  if (!bullJob && lostBeforeStart(context, entry, value)) return RESEND;
  if (!bullJob) {
    // Gone without an outcome: removed, or Redis restarted empty. Wait out every attempt's deadline first.
    const overdue = elapsed > (MAX_STALLED[job.queue] + 1) * perAttemptMs;
    return overdue
      ? workerLostOutcome(job, 'the job disappeared from the queue (was Redis restarted?)', elapsed)
      : undefined;
  }
  const startedAt = bullJob.processedOn;
  if (!startedAt) return notTaken(context, entry, queue, carrierId, now);
  if (now - startedAt <= perAttemptMs) return undefined;
  return workerLostOutcome(job, 'no worker reported it past its deadline', elapsed);
}

/**
 * Whether a call's vanished job (a Redis primary failed over and its replica never had the job)
 * may be enqueued again: only with resendLostJobs (TD_REDIS_REPLICA_ACKS ≥ 1). A side effect only
 * if it never started (its start is acknowledged by the replicas before it runs, so no start mark
 * means it never ran), at most MAX_RESENDS times; a concurrent call (a read, which DESIGN.md lets
 * run at most twice; it carries this coordinator's own mark from the enqueue) once.
 */
function lostBeforeStart(context: LookUpContext, entry: Pending, value: string | null): boolean {
  if (!context.resendLostJobs) return false;
  const resent = entry.resent ?? 0;
  if (entry.job.queue === 'serial') return value === null && resent < MAX_RESENDS;
  const carried = entry.carrier !== undefined && value === RUNNING_MARK + entry.carrier.id;
  return resent === 0 && (value === null || carried);
}

/** Nobody took the job within its calls' deadlines: it leaves the queue, and they all time out. */
async function notTaken(
  context: LookUpContext,
  entry: Pending,
  queue: Queue,
  carrierId: string,
  now: number,
): Promise<ExecOutcome | undefined> {
  const overdue = (c: Pending) => now - c.enqueuedAt > c.job.timeoutMs + SETTLE_GRACE_MS + context.overdueGraceMs;
  const waiting = (entry.carrier?.calls ?? [entry]).filter((c) => context.isWaiting(c));
  if (!overdue(entry) || !waiting.every(overdue)) return undefined;
  const removed = await queue.remove(carrierId).catch(() => 0);
  if (removed !== 1) return undefined;
  for (const c of waiting) if (c !== entry) c.settle(notStarted(c.job, now - c.enqueuedAt));
  return notStarted(entry.job, now - entry.enqueuedAt);
}
