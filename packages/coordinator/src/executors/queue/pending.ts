import type { ExecJob, ExecOutcome, InputRequester, QueueClass } from '@tool-dispatch/shared';
import { DEFAULT_JOB_CALLS, failedOutcome, MAX_JOB_CALLS } from '@tool-dispatch/shared';
import { batchJobIdFor } from '@tool-dispatch/shared/redis';
import { getOrCreate } from '../../support/maps.js';

/** The most TD_JOB_CALLS may say (a tick's concurrent calls beyond TD_JOB_CALLS go in further jobs). */
export const MAX_CALLS_PER_JOB = MAX_JOB_CALLS;

/** A call this coordinator waits on: enqueued (or gathering), its outcome not yet here. */
export interface Pending {
  job: ExecJob;
  /** The call's id (callIdFor): its outcome field, cancel mark and results messages. */
  callId: string;
  /** Whose namespace holds its outcome field and cancel mark (ExecJob.origin). */
  origin: string;
  enqueuedAt: number;
  lastCheckedAt: number;
  settle(outcome: ExecOutcome): void;
  promise: Promise<ExecOutcome>;
  /** Its run's shard of the queues (shardOf). */
  shard: number;
  /** The BullMQ job carrying it, once enqueued. */
  carrier?: SentCarrier;
  cancelled?: boolean;
  /** Whom its questions go to (an MCP elicitation), and the run's signal they wait under. */
  requestInput?: InputRequester;
  signal: AbortSignal;
  /** Questions waiting for their answer now: the deadline stands still meanwhile, as on the worker. */
  asking: number;
  /** Time its questions waited, added to its deadline. */
  askedMs: number;
  /** How many times its job was enqueued again after Redis lost it (`MAX_RESENDS`). */
  resent?: number;
}

/** How many times a call's job lost with its Redis primary is enqueued again before the call ends `worker_lost`. */
export const MAX_RESENDS = 2;

/**
 * The carrier (ARCHITECTURE.md glossary) as the coordinator sends it: one BullMQ job, a serial
 * call or the concurrent calls admitted together (of one round or several, of one run or several).
 */
export interface SentCarrier {
  /** The BullMQ job id (`carrierJobId`). */
  id: string;
  queue: QueueClass;
  shard: number;
  calls: readonly Pending[];
}

/** Calls admitted in the same tick, gathered into one job. */
export interface Gathering {
  calls: Pending[];
  enqueued: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/** TD_JOB_CALLS as the executor takes it: 1..MAX_CALLS_PER_JOB, DEFAULT_JOB_CALLS when unset. */
export function jobCallsOf(jobCalls: number | undefined): number {
  const n = jobCalls ?? DEFAULT_JOB_CALLS;
  if (!Number.isInteger(n) || n < 1 || n > MAX_CALLS_PER_JOB)
    throw new RangeError(`jobCalls must be an integer from 1 to ${MAX_CALLS_PER_JOB}, got ${n}`);
  return n;
}

/**
 * Which job a call joins in this tick. A serial call always runs alone (DESIGN.md pass 2), so it
 * is a job of its own, as is every call at TD_JOB_CALLS=1. The concurrent calls admitted in one
 * tick share a job per queue shard, whatever their session and run (DESIGN.md "Fewer queue hops per
 * call", as corrected for v1.3): each run's share is what its limiter admitted, so within its limit,
 * and the job's calls are at most TD_JOB_CALLS in all. Their outcome hashes and cancel marks are all in
 * this coordinator's slot (`{c:<coordinator>}`), so one script still covers a job's calls on a
 * cluster. A takeover's calls (origin) travel apart: their worker checks them before it starts them.
 */
export function gatheringKeyOf(entry: Pending, jobCalls: number): string {
  const { job } = entry;
  return job.queue === 'serial' || jobCalls === 1
    ? `alone\u0000${entry.callId}`
    : `concurrent\u0000${entry.shard}\u0000${job.origin ?? ''}`;
}

/** An empty gathering, its `enqueued` settled by `resolve` or `reject` once its job is added. */
export function newGathering(): Gathering {
  let resolve: () => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const enqueued = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { calls: [], enqueued, resolve, reject };
}

/**
 * A job's id from the calls it carries (idempotent enqueue): `<round>-<i>.<j>…` per round, in the
 * order the rounds joined, joined by `+`.
 */
export function carrierJobId(calls: readonly Pending[]): string {
  const byRound = new Map<string, number[]>();
  for (const c of calls) getOrCreate(byRound, c.job.round, () => []).push(c.job.callIndex);
  return [...byRound]
    .map(([round, indexes]) =>
      batchJobIdFor(
        round,
        indexes.sort((a, b) => a - b),
      ),
    )
    .join('+');
}

/** A job's name from the TD_JOB_NAME template: its tools (joined by `+`), its first call's session, run and round, its queue. */
export function jobNameFor(template: string, calls: readonly { job: ExecJob }[]): string {
  const first = calls[0]?.job;
  const fields: Record<string, string> = {
    tools: [...new Set(calls.map((c) => c.job.name))].join('+'),
    session: first?.session ?? '',
    run: first?.run ?? '',
    round: first?.round ?? '',
    queue: first?.queue ?? '',
  };
  return template.replace(/\{(\w+)\}/g, (whole, field: string) => fields[field] ?? whole);
}

export function notStarted(job: ExecJob, durationMs: number): ExecOutcome {
  const why = `no worker started ${job.name} within its deadline of ${job.timeoutMs} ms (are workers running?)`;
  return failedOutcome('deadline', why, durationMs);
}
