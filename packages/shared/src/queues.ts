import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { DEFAULT_FINISHED_JOB_RETENTION_MS, DEFAULT_OUTCOME_AFTER_COMMIT_TTL_MS } from './config.js';
import {
  callIdFor,
  type ExecJob,
  type ExecOutcome,
  failedOutcome,
  type InputReply,
  type InputRequest,
  type QueueClass,
} from './execution.js';
import type { AnnouncedTool, McpServerStatus } from './mcp.js';
import { isRedisRefusal } from './redis-durability.js';
import { ERROR_CODES, type ErrorCode } from './result.js';

/**
 * BullMQ queue names. BullMQ's own `prefix` option carries TD_PREFIX; the braces make each
 * queue's keys one Redis Cluster slot, as BullMQ requires on a cluster. No colons (BullMQ).
 */
export const QUEUE_NAMES = {
  concurrent: '{td-concurrent}',
  serial: '{td-serial}',
} as const satisfies Record<QueueClass, string>;

/** Redis Cluster's hash slots. */
const CLUSTER_SLOTS = 16_384;
const shardNames = new Map<string, string>();

/**
 * The BullMQ queue name of shard `shard` of `shards` (TD_QUEUE_SHARDS) of a class. One shard keeps
 * QUEUE_NAMES. With more, shard i is `{td-<class>-<i>-<k>}`, k the first number that puts the name's
 * hash slot in the i-th of `shards` equal parts of the slot range: on a cluster whose primaries
 * hold equal ranges (as `redis-cli --cluster create` makes them) the shards spread over the
 * primaries instead of landing where their names happen to hash.
 */
export function shardQueueName(cls: QueueClass, shard: number, shards: number): string {
  if (shards === 1) return QUEUE_NAMES[cls];
  if (!Number.isInteger(shard) || shard < 0 || shard >= shards) {
    throw new RangeError(`shard ${shard} is not one of 0..${shards - 1}`);
  }
  const cacheKey = `${cls} ${shard} ${shards}`;
  const cached = shardNames.get(cacheKey);
  if (cached) return cached;
  const from = Math.floor((shard * CLUSTER_SLOTS) / shards);
  const to = Math.floor(((shard + 1) * CLUSTER_SLOTS) / shards);
  for (let k = 0; ; k++) {
    const name = `{td-${cls}-${shard}-${k}}`;
    const slot = calculateSlot(name);
    if (slot >= from && slot < to) {
      shardNames.set(cacheKey, name);
      return name;
    }
  }
}

/** Every shard's queue name of a class, shard 0 first. */
export function shardQueueNames(cls: QueueClass, shards: number): string[] {
  return Array.from({ length: shards }, (_, i) => shardQueueName(cls, i, shards));
}

/**
 * The shard of a run's jobs (all of them, both classes): a stable hash of session and run, the
 * same in every process, so a takeover enqueues where the first coordinator did.
 */
export function shardOf(session: string, run: string, shards: number): number {
  if (shards === 1) return 0;
  return createHash('sha1').update(session).update('\u0000').update(run).digest().readUInt32BE(0) % shards;
}

/**
 * What every process of a deployment must agree on, kept in Redis (RedisKeys.deployment) by the
 * coordinators and compared by every process at start (`checkDeployment`).
 */
export interface DeploymentRecord {
  queueShards: number;
  /** Who wrote it (a coordinator's id), and when (epoch ms). */
  by: string;
  at: number;
}

/**
 * Lock of an active job; a worker that dies loses it after this long (BullMQ `lockDuration`). A
 * worker cut off from Redis stops the job's calls itself at half of it after its last renewal
 * that succeeded (worker queue/fencing.ts), so it must stay below the run's places' lease
 * (PLACE_LEASE_MS): docs/operations.md, "Partitions".
 */
export const JOB_LOCK_MS = 5_000;
/**
 * How long a run's place or serial turn outlives its coordinator's last renewal (renewed a third
 * of it at a time): three coordinator leases, so a coordinator taking a dead one's rounds over
 * finds their places held; and far above the time a worker cut off from Redis can go on running
 * a call (half of JOB_LOCK_MS and its kill).
 */
export const PLACE_LEASE_MS = 15_000;
/** How often workers look for jobs whose lock expired (BullMQ `stalledInterval`). */
export const STALLED_INTERVAL_MS = 5_000;
/**
 * DESIGN.md failure semantics: a concurrent (read-only) call whose worker dies is retried once;
 * a serial (side-effecting) one is never re-run.
 */
export const MAX_STALLED = { concurrent: 1, serial: 0 } as const satisfies Record<QueueClass, number>;
/** BullMQ's failedReason for a job that stalled more than `maxStalledCount` times. */
export const STALLED_REASON = 'job stalled more than allowable limit';
/**
 * How many times a job of each class may start (BullMQ `attempts` and `maxStartedAttempts`): a
 * concurrent job whose processor failed (Redis refused or timed out a start, report or move: its
 * handlers' errors are outcomes, never failures) runs once more, as one whose worker died does,
 * and never a third time however the two came about; a serial job starts once.
 */
export const MAX_STARTS = { concurrent: 2, serial: 1 } as const satisfies Record<QueueClass, number>;
/** BullMQ's failedReason for a job started more than `maxStartedAttempts` times. */
export const MAX_STARTS_REASON = 'job started more than allowable limit';

/** How often a worker announces its handlers and that it is alive. */
export const WORKER_HEARTBEAT_MS = 2_000;
/** A worker not heard from for this long counts as gone. */
export const WORKER_TTL_MS = 3 * WORKER_HEARTBEAT_MS;
/** How long a job's outcome stays readable (by a recovering coordinator, or a repeated enqueue). */
export const OUTCOME_TTL_MS = 24 * 60 * 60_000;
/**
 * How long an outcome stays once its round is committed: nothing resumes a committed round, so
 * it only has to outlive a redelivery of its job after a worker died (lock and stalled check
 * well within this), and an output is not kept in Redis twice for a day.
 */
export const OUTCOME_AFTER_COMMIT_TTL_MS = DEFAULT_OUTCOME_AFTER_COMMIT_TTL_MS;
/** How long finished jobs stay in BullMQ (so an enqueue with the same job id is a no-op); TD_FINISHED_JOB_RETENTION_MS. */
export const FINISHED_JOB_RETENTION_S = DEFAULT_FINISHED_JOB_RETENTION_MS / 1000;
/** How long a cancellation mark waits for a worker that has not started the job yet. */
export const CANCEL_TTL_MS = 10 * 60_000;
/** A results stream no coordinator reads expires after this. */
export const RESULTS_STREAM_TTL_MS = 24 * 60 * 60_000;

/**
 * The BullMQ payload: calls one coordinator admitted together (the concurrent calls of the rounds
 * admitted in one tick, or one serial call), plus where to send their outcomes. Each call keeps
 * its own id, deadline, outcome and cancellation; the job only carries them.
 */
export interface QueuedJob {
  /** All of one queue; a round's calls in call order. */
  calls: ExecJob[];
  /** Key of the owning coordinator's results stream (RedisKeys.results). */
  replyTo: string;
  /** The owning coordinator; its namespace holds the outcome hashes of calls without an `origin`. */
  coordinator: string;
}

/**
 * A QueuedJob as it travels in a BullMQ job's data: each call leaves out the fields it shares with
 * the call before it (`encodeQueuedJob`). `parseQueuedJob` reads this and the full form alike.
 */
export type QueuedJobData = Omit<QueuedJob, 'calls'> & { calls: Partial<ExecJob>[] };

/**
 * An outcome field holds this plus a BullMQ job id while that job runs the call, so a second job
 * carrying the same call (a takeover that grouped calls differently) leaves it alone.
 */
export const RUNNING_MARK = 'running ';

/** Published on RedisKeys.cancelChannel: abort that call wherever it runs. */
export interface CancelMessage {
  /** The call's id (callIdFor). */
  callId: string;
  queue: QueueClass;
}

/**
 * A question a running call asks (an MCP elicitation), sent by the worker on the results stream
 * as the fields `ask <call id>`, `question <this as JSON>`; the coordinator parks it and answers
 * on RedisKeys.answerChannel and the answer key.
 */
export interface AskMessage {
  /** The question's place among the call's (1, 2, …). */
  n: number;
  request: InputRequest;
}

/** Published on RedisKeys.answerChannel: the answer to a running call's `n`th question. */
export interface AnswerMessage {
  callId: string;
  n: number;
  reply: InputReply;
}

/** An AskMessage read back, or undefined when it is not one. */
export function parseAskMessage(value: unknown): AskMessage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const r = v.request as Record<string, unknown> | undefined;
  if (!Number.isInteger(v.n) || typeof r !== 'object' || r === null || r.kind !== 'elicitation') return undefined;
  if (typeof r.args !== 'object' || r.args === null || Array.isArray(r.args)) return undefined;
  return { n: v.n as number, request: { kind: 'elicitation', args: r.args as Record<string, unknown> } };
}

/** An InputReply read back (`{output}` or `{error: string}`), or undefined. */
export function parseInputReply(value: unknown): InputReply | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if ('output' in v) return { output: v.output };
  if (typeof v.error === 'string') return { error: v.error };
  return undefined;
}

/** What a worker announces on each heartbeat (RedisKeys.worker). */
export interface WorkerAnnouncement {
  id: string;
  handlers: string[];
  /** Concurrent-queue calls it runs at once (TD_WORKER_CONCURRENCY). */
  concurrency: number;
  /** Serial-queue jobs it runs at once (TD_WORKER_SERIAL_CONCURRENCY, v1.1); absent from workers before v1.1 (1). */
  serialConcurrency?: number;
  /** Shards of each queue it consumes (TD_QUEUE_SHARDS); absent from workers before shards (1). */
  queueShards?: number;
  pid: number;
  host: string;
  startedAt: number;
  at: number;
  /** Its MCP servers' tools (v1.1): what the coordinators' catalogs hold as `mcp__<server>__<tool>`. */
  tools?: AnnouncedTool[];
  /** Its MCP servers' states (v1.1). */
  mcp?: McpServerStatus[];
}

export { callIdFor };

/**
 * BullMQ job id of calls of one round enqueued together: the call's own id (callIdFor) for one
 * call, `<round>-<i>.<j>…` for a batch. The same calls always get the same id.
 */
export function batchJobIdFor(round: string, callIndexes: readonly number[]): string {
  const [first, ...more] = callIndexes;
  if (first === undefined) throw new Error('a batch needs at least one call');
  return more.length === 0 ? callIdFor(round, first) : `${callIdFor(round, first)}.${more.join('.')}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function isExecJob(job: unknown): job is ExecJob {
  if (!isObject(job)) return false;
  const strings = ['session', 'tenant', 'run', 'round', 'toolCallId', 'name', 'workspace'] as const;
  if (strings.some((k) => typeof job[k] !== 'string')) return false;
  if (typeof job.callIndex !== 'number' || typeof job.timeoutMs !== 'number' || !isObject(job.args)) return false;
  if (job.origin !== undefined && typeof job.origin !== 'string') return false;
  return job.queue === 'concurrent' || job.queue === 'serial';
}

/**
 * Fields a call leaves out of a job's data when they equal the previous call's: a round's calls
 * share them all, so a job of 5 calls is about half the size (BullMQ keeps it an hour). Optional
 * fields (`trace`, `origin`) are never left out, so a call never inherits another's.
 */
const SHARED_FIELDS = ['session', 'tenant', 'run', 'round', 'workspace', 'queue', 'timeoutMs'] as const;

const SHARED = new Set<string>(SHARED_FIELDS);

/** A QueuedJob as job data: each call without the SHARED_FIELDS equal to the call before it. */
export function encodeQueuedJob(job: QueuedJob): QueuedJobData {
  const calls: Partial<ExecJob>[] = [];
  let prev: ExecJob | undefined;
  for (const call of job.calls) {
    if (!prev) calls.push(call);
    else {
      // Built key by key (no delete), so it stays a fast object for JSON.stringify.
      const out: Record<string, unknown> = {};
      for (const k in call) {
        const v = call[k as keyof ExecJob];
        if (!SHARED.has(k) || v !== prev[k as keyof ExecJob]) out[k] = v;
      }
      calls.push(out as Partial<ExecJob>);
    }
    prev = call;
  }
  return { calls, replyTo: job.replyTo, coordinator: job.coordinator };
}

/**
 * Narrows a BullMQ job's data to a QueuedJob (calls of one queue; several rounds' calls, each
 * round's in call order), filling in what each call left out (`encodeQueuedJob`); undefined when
 * it is not one.
 */
export function parseQueuedJob(data: unknown): QueuedJob | undefined {
  if (!isObject(data) || typeof data.replyTo !== 'string' || typeof data.coordinator !== 'string') return undefined;
  if (!Array.isArray(data.calls) || data.calls.length === 0) return undefined;
  const calls: ExecJob[] = [];
  let prev: ExecJob | undefined;
  for (const raw of data.calls as unknown[]) {
    if (!isObject(raw)) return undefined;
    let call: Record<string, unknown> = raw;
    if (prev && SHARED_FIELDS.some((k) => !(k in raw))) {
      call = {};
      for (const k of SHARED_FIELDS) call[k] = prev[k];
      for (const k in raw) call[k] = raw[k];
    }
    if (!('toolCallId' in call) && typeof call.callId === 'string') call = fromNamedCallId(call);
    if (!isExecJob(call) || (prev && call.queue !== prev.queue)) return undefined;
    calls.push(call);
    prev = call;
  }
  return { calls, replyTo: data.replyTo, coordinator: data.coordinator };
}

/** A call from a coordinator of before 1.3, which named the model's id `callId`: the same call with `toolCallId`. */
function fromNamedCallId(call: Record<string, unknown>): Record<string, unknown> {
  const { callId, ...rest } = call;
  return { ...rest, toolCallId: callId };
}

/** Narrows a decoded outcome (from a results message or an outcome field); undefined when malformed. */
export function parseOutcome(value: unknown): ExecOutcome | undefined {
  if (!isObject(value) || typeof value.durationMs !== 'number') return undefined;
  if (value.status === 'ok' && typeof value.ranOn === 'string') return { output: undefined, ...value } as ExecOutcome;
  if (
    value.status === 'error' &&
    typeof value.message === 'string' &&
    (ERROR_CODES as readonly string[]).includes(value.code as string)
  ) {
    return value as ExecOutcome & { code: ErrorCode };
  }
  return undefined;
}

/** Decodes JSON text, undefined when it does not parse. */
export function tryParseJson(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The outcome of a call whose worker was lost (a crash, a kill, a job that vanished): unknown, so
 * an error naming why and whether it was re-run (DESIGN.md: serial calls never are, concurrent
 * ones at most once).
 */
export function workerLostOutcome(
  call: Pick<ExecJob, 'name' | 'queue'>,
  why: string,
  durationMs: number,
): Extract<ExecOutcome, { status: 'error' }> {
  const rerun = call.queue === 'serial' ? 'it was not re-run' : 'it was retried at most once';
  return failedOutcome('worker_died', `${call.name}: ${why}; the outcome is unknown and ${rerun}`, durationMs);
}

/**
 * The verdict on a call of a BullMQ job that failed without its outcome, from the job's failed
 * reason: stalled past its limit (STALLED_REASON) is a lost worker, anything else the worker's
 * failure to finish. The worker (on BullMQ's `failed`) and the coordinator (its poll) say the same.
 */
export function failedJobVerdict(
  call: Pick<ExecJob, 'name' | 'queue'>,
  failedReason: string,
  durationMs: number,
): Extract<ExecOutcome, { status: 'error' }> {
  if (failedReason === STALLED_REASON || failedReason === MAX_STARTS_REASON)
    return workerLostOutcome(call, 'its worker died', durationMs);
  // Redis refused or timed out a start or report (a failover): the call may have run.
  if (isRedisRefusal(new Error(failedReason)))
    return workerLostOutcome(call, `the worker lost Redis while running it (${failedReason})`, durationMs);
  return failedOutcome('handler_threw', `the worker could not finish the job: ${failedReason}`, durationMs);
}
