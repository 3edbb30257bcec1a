import type { ExecJob, ExecOutcome, QueueClass } from '@tool-dispatch/shared';
import { failedOutcome } from '@tool-dispatch/shared';
import { callIdFor, parseOutcome, type QueuedJob, tryParseJson } from '@tool-dispatch/shared/redis';
import type { Job } from 'bullmq';
import { isFenced } from '../support/fenced.js';
import { fencedOutcome, reportWhenReachable } from './fencing.js';
import { StartCallsStatus } from './lua/startCalls-n2n.lua.js';
import type { CallRef, CallStart, ReportFn } from './reporter.js';
import type { RunningCalls } from './running-calls.js';

/**
 * The carrier (ARCHITECTURE.md glossary) as the worker takes it: the BullMQ job carrying calls, its
 * id, its queue (a shard's name), and when the coordinator added it.
 */
export interface TakenCarrier {
  id: string;
  addedAtMs: number;
  queueName: string;
}

/** One call of a queued job, as it runs here. */
export interface QueuedCall extends CallRef {
  readonly job: ExecJob;
  /** Stops this call (a cancel, the job's own stop). */
  readonly stop: AbortController;
}

/** What running a queued job needs: the calls running here, the reporter's part, and how one call runs. */
export interface RunQueuedJobContext {
  /** The worker's id (a cancelled call's outcome says where it ended). */
  readonly id: string;
  readonly running: RunningCalls;
  /** Marks the calls running, or finds them cancelled, run before, or run by another job. */
  readonly start: (
    calls: readonly CallRef[],
    carrierId: string,
    queue: QueueClass,
    queueName?: string,
  ) => Promise<(CallStart | undefined)[]>;
  /** Reports for one job (outcomes of one tick go out together). */
  readonly reportFor: (queued: QueuedJob, carrierId: string) => ReportFn;
  /** Runs one call to its outcome (a slot, its deadline, its handler). */
  readonly runCall: (call: QueuedCall, queued: QueuedJob, carrier: TakenCarrier) => Promise<ExecOutcome>;
}

/**
 * Runs a job's calls side by side, each with its own deadline and cancel, a failure never
 * taking a sibling down; returns the outcomes by call id (the job's return value, a safety
 * net for a coordinator that missed a report). `checkStart`: see `needsStartCheck`.
 */
export async function runQueuedJob(
  context: RunQueuedJobContext,
  queued: QueuedJob,
  carrier: TakenCarrier,
  signal: AbortSignal,
  checkStart: boolean,
): Promise<Record<string, ExecOutcome>> {
  const calls: QueuedCall[] = queued.calls.map((job) => ({
    job,
    callId: callIdFor(job.round, job.callIndex),
    origin: job.origin ?? queued.coordinator,
    stop: new AbortController(),
  }));
  // Listening before the start check: a cancel published after it is heard, one before it left its mark.
  for (const c of calls) context.running.add(c.callId, c.stop);
  // BullMQ's own stop (the job's) stops every call of it.
  const stopAll = () => {
    for (const c of calls) c.stop.abort(signal.reason);
  };
  if (signal.aborted) stopAll();
  else signal.addEventListener('abort', stopAll, { once: true });
  const outcomes: Record<string, ExecOutcome> = {};
  const report = context.reportFor(queued, carrier.id);
  try {
    const starts: (CallStart | undefined)[] = checkStart
      ? await context.start(calls, carrier.id, queued.calls[0]?.queue ?? 'serial', carrier.queueName)
      : calls.map(() => StartCallsStatus.Run);
    // Every call runs to its end even when a sibling's report fails; then the job fails with it.
    const settled = await Promise.allSettled(
      calls.map(async function runOneCall(c, i) {
        const found = await outcomeOf(context, c, starts[i], queued, carrier);
        if (!found) return;
        // A call its fence stopped (queue/fencing.ts), once its handler ended (its sandbox gone),
        // ends worker_lost, reported once Redis is back, serial or concurrent alike: first write
        // wins, so a read its stalled job ran again elsewhere keeps whichever outcome came first,
        // and one nobody ran again is still answered.
        const outcome = found.recorded ? found.outcome : fencedOutcome(c.stop.signal, found.outcome, c.job);
        outcomes[c.callId] = outcome;
        const send = () => report(c, outcome, { recorded: found.recorded });
        await send().catch((e: unknown) => (isFenced(signal.reason) ? reportWhenReachable(send) : Promise.reject(e)));
      }),
    );
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return outcomes;
  } finally {
    signal.removeEventListener('abort', stopAll);
    for (const c of calls) context.running.remove(c.callId, c.stop);
  }
}

/** A call's outcome by what its start check found, or undefined when another job reports it. */
async function outcomeOf(
  context: RunQueuedJobContext,
  call: QueuedCall,
  start: CallStart | undefined,
  queued: QueuedJob,
  carrier: TakenCarrier,
): Promise<{ outcome: ExecOutcome; recorded: boolean } | undefined> {
  // Another job runs this call (a takeover grouped the calls differently): its report stands.
  if (start === StartCallsStatus.Elsewhere || start === undefined) return undefined;
  if (typeof start === 'object' && 'ends' in start) return { outcome: start.ends, recorded: false };
  if (typeof start === 'object') {
    const recorded = parseOutcome(tryParseJson(start.recorded));
    // Run before (an earlier attempt, or another job): sent again, in case that report was lost.
    return recorded ? { outcome: recorded, recorded: true } : undefined;
  }
  if (start === StartCallsStatus.Cancelled) {
    const outcome = failedOutcome('run_cancelled', 'the call was cancelled before it started', 0, {
      ranOn: context.id,
    });
    return { outcome, recorded: false };
  }
  return { outcome: await context.runCall(call, queued, carrier), recorded: false };
}

/**
 * Whether a job's calls are checked before they start (`startCalls`: cancelled, run before, or
 * running in another job). A concurrent job on its first delivery, enqueued by the coordinator
 * that began its round, skips it (one round trip less): that coordinator marked its calls as
 * carried by it before adding it (markCarried), so no other job runs them, and only a takeover
 * (whose calls carry `origin`) or a redelivery after a worker died (a later attempt) can meet a
 * call that ran or runs elsewhere. What it gives up: a cancel that lands between BullMQ handing
 * the job over and this worker listening for it is missed, and the call (read-only, as every
 * concurrent tool is) runs with its outcome discarded. Serial calls are always checked.
 */
export function needsStartCheck(queue: QueueClass, bullJob: Job, queued: QueuedJob): boolean {
  if (queue === 'serial') return true;
  if (bullJob.attemptsStarted > 1 || bullJob.stalledCounter > 0) return true;
  return queued.calls.some((c) => c.origin !== undefined);
}
