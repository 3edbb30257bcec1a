import { type ExecOutcome, failedOutcome, type QueueClass, splitCallId } from '@tool-dispatch/shared';
import {
  callIdFor,
  DuePerKey,
  failedJobVerdict,
  groupSlots,
  isNotDurable,
  isRedisRefusal,
  OUTCOME_TTL_MS,
  type OutcomeSlot,
  outcomeFields,
  outcomeSlot,
  parseQueuedJob,
  type QueuedJob,
  RESULTS_STREAM_MAXLEN,
  RESULTS_STREAM_TTL_MS,
  type RedisClient,
  type RedisKeys,
  ReplicaAcks,
  RUNNING_MARK,
  runScript,
} from '@tool-dispatch/shared/redis';
import type { Job } from 'bullmq';
import { parseRecordOutcomesReply, recordOutcomesScript } from './lua/recordOutcomes-n.lua.js';
import { parseReportOutcomesReply, reportOutcomesScript } from './lua/reportOutcomes-1n.lua.js';
import {
  parseStartCallsReply,
  type StartCallReply,
  StartCallsStatus,
  startCallsScript,
} from './lua/startCalls-n2n.lua.js';
import { claimStaleMarks, withoutJobId } from './stale-marks.js';

/** How long a report is sent again while Redis refuses it (a failover: the cluster's node timeout and an election). */
const REPORT_PATIENCE_MS = 15_000;
const REPORT_RETRY_MS = 250;

/** How often a results stream's TTL is pushed back (it expires RESULTS_STREAM_TTL_MS after that). */
const STREAM_EXPIRE_EVERY_MS = 60_000;

/** A call as the reporter sees it: its id, and whose namespace holds its outcome field and cancel mark. */
export interface CallRef {
  readonly callId: string;
  readonly origin: string;
}

/** How a call starts: startCalls's reply, or an outcome it ends with unrun (`Reporter.start`). */
export type CallStart = StartCallReply | { ends: ExecOutcome };

/** Reports one call's outcome; `recorded`: recorded before (an earlier attempt), only sent again. */
export type ReportFn = (call: CallRef, outcome: ExecOutcome, options?: { recorded: boolean }) => Promise<void>;

/** What the reporter needs: Redis and the key layout. */
export interface ReporterContext {
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** TD_REDIS_REPLICA_ACKS and TD_REDIS_WAIT_MS: a serial call's start mark acknowledged by replicas before it runs. */
  readonly durability?: { acks: number; waitMs: number } | undefined;
}

interface Report extends CallRef {
  json: string;
  /** Already recorded (by an earlier attempt): only sent again. */
  recorded: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

/** Where a job's outcomes go: the results stream, and the namespace that shares its hash tag. */
interface ReplyTarget {
  replyTo: string;
  /** The origin whose outcome hashes sit beside the stream (recorded and sent in one script); undefined if none. */
  home: string | undefined;
}

/**
 * Records each call's outcome once (its field of the round's outcome hash) and sends it to the owning coordinator's
 * results stream: one script when the outcome hashes are the stream's coordinator's (the usual
 * case), else a record then a send. Outcomes of one job known in the same tick go out together.
 */
export class Reporter {
  private readonly expiry = new DuePerKey(STREAM_EXPIRE_EVERY_MS);
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly durability: ReplicaAcks;

  constructor(context: ReporterContext) {
    this.redis = context.redis;
    this.keys = context.keys;
    const acks = context.durability;
    this.durability = new ReplicaAcks(context.redis, acks?.acks ?? 0, acks?.waitMs ?? 0);
  }

  /**
   * Marks the job's calls running, or finds them cancelled, run before, or run by another job.
   * A serial call (a side effect) marked running by this job before (an earlier delivery whose
   * outcome is unknown, seen after a failover brought the job back) is not run again: it ends
   * `worker_lost`. With TD_REDIS_REPLICA_ACKS, a serial call runs only once its mark is
   * acknowledged by the replicas; else it ends `error`/`unavailable`, not run (API.md v1.2).
   */
  async start(
    calls: readonly CallRef[],
    carrierId: string,
    queue: QueueClass,
    /** The job's BullMQ queue: with it, a concurrent call holding a vanished job's mark is taken over (claimStaleMarks). */
    queueName?: string,
  ): Promise<(CallStart | undefined)[]> {
    const replies: (CallStart | undefined)[] = new Array(calls.length);
    const startInNamespace = async ([origin, indexes]: [string, number[]]) => {
      const refs = indexes.map((i) => calls[i] as CallRef);
      const { keys: hashes, at } = groupSlots(refs.map((c) => outcomeSlot(this.keys, origin, c.callId)));
      const keys = [...hashes];
      const args: (string | number)[] = [RUNNING_MARK + carrierId, OUTCOME_TTL_MS, hashes.length];
      const fields = refs.map((c) => splitCallId(c.callId).callIndex);
      refs.forEach((c, k) => {
        keys.push(this.keys.cancel(origin, c.callId), this.keys.legacyOutcome(origin, c.callId));
        args.push(at[k] as number, fields[k] as number);
      });
      const replied = parseStartCallsReply(await runScript(this.redis, startCallsScript, keys, args));
      const got: CallStart[] =
        queue === 'concurrent' && queueName !== undefined
          ? await claimStaleMarks(this.redis, this.keys, { hashes, at, fields }, replied, carrierId, queueName)
          : replied.map(withoutJobId);
      if (queue === 'serial') await this.sideEffectStarts(got, hashes[0] as string);
      indexes.forEach((callIndex, k) => {
        const reply = got[k];
        replies[callIndex] = reply === StartCallsStatus.Again ? StartCallsStatus.Run : reply;
      });
    };
    // One script per namespace (a Redis Cluster slot); a job's calls normally share one.
    await Promise.all([...indexesByOrigin(calls)].map(startInNamespace));
    return replies;
  }

  /** The durability point of serial calls' starts (see `start`); `got` is rewritten in place. */
  private async sideEffectStarts(got: CallStart[], outcomeKey: string): Promise<void> {
    got.forEach((reply, k) => {
      if (reply === StartCallsStatus.Again)
        got[k] = {
          ends: failedOutcome(
            'worker_died',
            'this call was started before and its outcome was lost (a Redis failover, or its worker died); it is not run again',
            0,
          ),
        };
    });
    if (!this.durability.enabled || !got.includes(StartCallsStatus.Run)) return;
    try {
      await this.durability.confirm(outcomeKey, "the call's start");
    } catch (e) {
      if (!isNotDurable(e)) throw e;
      const why = `${(e as Error).message}; the call did not run: send the round again in a moment`;
      got.forEach((reply, k) => {
        if (reply === StartCallsStatus.Run) got[k] = { ends: failedOutcome('start_unacknowledged', why, 0) };
      });
    }
  }

  /** Reports for one carrier (BullMQ job): outcomes given in the same tick are recorded and sent together. */
  forJob(queued: QueuedJob, carrierId: string): ReportFn {
    const target: ReplyTarget = {
      replyTo: queued.replyTo,
      home: this.keys.results(queued.coordinator) === queued.replyTo ? queued.coordinator : undefined,
    };
    let gathering: Report[] = [];
    return (call, outcome, options) =>
      new Promise<void>((resolve, reject) => {
        if (gathering.length === 0) {
          process.nextTick(() => {
            const reports = gathering;
            gathering = [];
            this.flush(target, carrierId, reports).catch((e: unknown) => {
              for (const r of reports) r.reject(e);
            });
          });
        }
        gathering.push({
          callId: call.callId,
          origin: call.origin,
          json: JSON.stringify(outcome),
          recorded: options?.recorded === true,
          resolve,
          reject,
        });
      });
  }

  /**
   * A job BullMQ failed without our processor's outcomes: it stalled past its limit (its worker
   * died), or the processor could not report. Each of its calls without an outcome gets one
   * (`failedJobVerdict`, as the coordinator's poll would say); serial calls are never re-run. A
   * failure BullMQ retries (a concurrent job's first, MAX_STARTS) is not the job's end: the next
   * start finds what this one recorded, or runs the call.
   */
  async reportFailure(bullJob: Job, error: Error): Promise<void> {
    const queued = parseQueuedJob(bullJob.data);
    if (!queued || bullJob.id === undefined || !bullJob.finishedOn) return;
    const report = this.forJob(queued, bullJob.id);
    const durationMs = bullJob.processedOn ? Math.max(0, Date.now() - bullJob.processedOn) : 0;
    await Promise.all(
      queued.calls.map((call) => {
        const ref = { callId: callIdFor(call.round, call.callIndex), origin: call.origin ?? queued.coordinator };
        return report(ref, failedJobVerdict(call, error.message, durationMs));
      }),
    );
  }

  /**
   * Records and sends, again while Redis refuses or times out (a failover under way, each command
   * cut at TD_REDIS_COMMAND_TIMEOUT_MS) for up to REPORT_PATIENCE_MS: the call ran, and failing its
   * job over a report would end it `worker_lost`. Sending twice is harmless (an outcome recorded
   * stands; the coordinator drops a result for a call no longer waiting).
   */
  private async flush(target: ReplyTarget, carrierId: string, reports: readonly Report[]): Promise<void> {
    const home = reports.filter((r) => r.origin === target.home);
    const apart = home.length === reports.length ? [] : reports.filter((r) => r.origin !== target.home);
    const until = Date.now() + REPORT_PATIENCE_MS;
    for (;;) {
      try {
        await Promise.all([
          home.length > 0 ? this.recordAndSend(target.replyTo, carrierId, home) : undefined,
          apart.length > 0 ? this.recordThenSend(target.replyTo, carrierId, apart) : undefined,
        ]);
        break;
      } catch (e) {
        if (!isRedisRefusal(e) || Date.now() > until) throw e;
        await new Promise((r) => setTimeout(r, REPORT_RETRY_MS));
      }
    }
    for (const r of reports) r.resolve();
  }

  /** Outcome hashes beside the stream: one script records the fresh outcomes and sends what it recorded. */
  private async recordAndSend(replyTo: string, carrierId: string, reports: readonly Report[]): Promise<void> {
    const fresh = reports.filter((r) => !r.recorded);
    const slots = fresh.map((r) => outcomeSlot(this.keys, r.origin, r.callId));
    const { keys: hashes, at } = groupSlots(slots);
    const streamTtlMs = this.isExpireDue(replyTo) ? RESULTS_STREAM_TTL_MS : 0;
    const args: (string | number)[] = [RUNNING_MARK + carrierId, OUTCOME_TTL_MS, RESULTS_STREAM_MAXLEN, streamTtlMs];
    args.push(fresh.length);
    fresh.forEach((r, j) => {
      args.push(at[j] as number, (slots[j] as OutcomeSlot).field, r.callId, r.json);
    });
    for (const r of reports) if (r.recorded) args.push(r.callId, r.json);
    parseReportOutcomesReply(await runScript(this.redis, reportOutcomesScript, [replyTo, ...hashes], args));
  }

  /**
   * Outcome hashes in another namespace (a coordinator took the round over): recorded there first,
   * then the ones recorded now, and those recorded before, sent.
   */
  private async recordThenSend(replyTo: string, carrierId: string, reports: readonly Report[]): Promise<void> {
    const fresh = reports.filter((r) => !r.recorded);
    const recordedNow = new Set<Report>();
    const recordInNamespace = async ([origin, indexes]: [string, number[]]) => {
      const group = indexes.map((i) => fresh[i] as Report);
      const slots = group.map((r) => outcomeSlot(this.keys, origin, r.callId));
      const { keys, at } = groupSlots(slots);
      const args: (string | number)[] = [RUNNING_MARK + carrierId, OUTCOME_TTL_MS];
      group.forEach((r, k) => {
        args.push(at[k] as number, (slots[k] as OutcomeSlot).field, r.json);
      });
      const recorded = parseRecordOutcomesReply(await runScript(this.redis, recordOutcomesScript, keys, args));
      group.forEach((r, k) => {
        if (recorded[k] === true) recordedNow.add(r);
      });
    };
    await Promise.all([...indexesByOrigin(fresh)].map(recordInNamespace));
    // An outcome recorded before (an earlier attempt, or a worker_lost verdict) stands: this one is not sent.
    const send = reports.filter((r) => r.recorded || recordedNow.has(r));
    if (send.length > 0) await this.send(replyTo, send);
  }

  private async send(replyTo: string, reports: readonly Report[]): Promise<void> {
    const fields = outcomeFields(reports);
    if (!this.isExpireDue(replyTo)) {
      await this.redis.xadd(replyTo, 'MAXLEN', '~', RESULTS_STREAM_MAXLEN, '*', ...fields);
      return;
    }
    await this.redis
      .multi()
      .xadd(replyTo, 'MAXLEN', '~', RESULTS_STREAM_MAXLEN, '*', ...fields)
      .pexpire(replyTo, RESULTS_STREAM_TTL_MS)
      .exec();
  }

  /** Whether the stream's TTL is due to be pushed back (at most once a STREAM_EXPIRE_EVERY_MS); notes it as done. */
  private isExpireDue(replyTo: string): boolean {
    if (!this.expiry.due(replyTo)) return false;
    this.expiry.done(replyTo);
    return true;
  }
}

/** Indexes of `calls` by origin, in order. */
function indexesByOrigin(calls: readonly { readonly origin: string }[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  calls.forEach((c, i) => {
    const group = groups.get(c.origin);
    if (group) group.push(i);
    else groups.set(c.origin, [i]);
  });
  return groups;
}
