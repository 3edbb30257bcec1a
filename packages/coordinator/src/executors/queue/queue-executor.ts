import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type AnnouncedTool,
  DispatchError,
  type ExecJob,
  type ExecOutcome,
  type ExecuteOptions,
  type Executor,
  failedOutcome,
  type QueueClass,
  raceAbort,
  SETTLE_GRACE_MS,
} from '@tool-dispatch/shared';
import {
  CANCEL_TTL_MS,
  type CancelMessage,
  callIdFor,
  coalesceWrites,
  connectRedis,
  encodeQueuedJob,
  FINISHED_JOB_RETENTION_S,
  JOB_LOCK_MS,
  MAX_STARTS,
  OUTCOME_AFTER_COMMIT_TTL_MS,
  OUTCOME_TTL_MS,
  type RedisClient,
  type RedisKeys,
  redisKeys,
  STALLED_INTERVAL_MS,
  shardOf,
  shardQueueNames,
  type WorkerAnnouncement,
} from '@tool-dispatch/shared/redis';
import { Queue } from 'bullmq';
import { runScript } from '../../support/redis-client.js';
import { settleWithin } from '../../support/settle.js';
import { answerQuestion } from './answer-question.js';
import { CommittedOutcomes } from './committed-outcomes.js';
import { Gatherer } from './gatherer.js';
import { markCarriedInput, markCarriedScript, parseMarkCarriedReply } from './lua/markCarried-n.lua.js';
import type { QueueExecutorOptions } from './options.js';
import { type LookUpContext, lookUpPending, RESEND } from './overdue.js';
import { carrierJobId, jobCallsOf, jobNameFor, type Pending, type SentCarrier } from './pending.js';
import { ResultsReader } from './results-reader.js';
import { WorkerDirectory } from './worker-directory.js';

export type { QueueExecutorOptions } from './options.js';
export { jobNameFor } from './pending.js';

/**
 * Pass 2 over BullMQ: enqueues calls on the concurrent or serial queue under idempotent job ids,
 * and waits for each outcome on this coordinator's results stream (a Redis stream with a
 * consumer group), with a poll of outcome hashes and job states as the safety net. Concurrent
 * calls admitted in the same tick, of every run (each run's limit already applied), share one
 * job per queue shard up to TD_JOB_CALLS; each keeps its own deadline, cancel and outcome.
 */
export class QueueExecutor implements Executor {
  readonly coordinatorId: string;
  /** The BullMQ queues of each class, one per shard (shard 0 first), for dashboards and queue-depth metrics. */
  readonly queues: Readonly<Record<QueueClass, readonly Queue[]>>;
  /** TD_QUEUE_SHARDS. */
  readonly queueShards: number;
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly resultsKey: string;
  private readonly results: ResultsReader;
  /** Live workers' announcements (handlers, liveness). */
  readonly workers: WorkerDirectory;
  private readonly pollIntervalMs: number;
  private readonly jobName: string;
  private readonly overdueGraceMs: number;
  private readonly resendLostJobs: boolean;
  private readonly onError: (error: Error) => void;
  private readonly finishedJobRetentionS: number;
  private readonly pending = new Map<string, Pending>();
  /** Calls gathered into jobs (several runs' calls of one tick, or of one add's round trip, per job). */
  private readonly gatherer: Gatherer;
  /** Outcome keys of committed rounds, to shorten at the next poll. */
  private readonly committedOutcomes: CommittedOutcomes;
  private readonly ready: Promise<void>;
  private readonly poller: NodeJS.Timeout;
  private closed = false;

  constructor(options: QueueExecutorOptions) {
    this.coordinatorId =
      options.coordinatorId ??
      `c-${hostname().replace(/[^A-Za-z0-9_.-]/g, '_')}-${process.pid}-${randomBytes(3).toString('hex')}`;
    if (this.coordinatorId.includes(':')) throw new Error(`coordinatorId ${this.coordinatorId} must not contain ':'`);
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.jobName = options.jobName ?? '{tools}';
    this.gatherer = new Gatherer(jobCallsOf(options.jobCalls), (calls) => this.enqueue(calls));
    this.overdueGraceMs = options.overdueGraceMs ?? 2 * JOB_LOCK_MS + 2 * STALLED_INTERVAL_MS + SETTLE_GRACE_MS;
    this.onError = options.onError ?? (() => {});
    this.resendLostJobs = options.resendLostJobs ?? false;
    // BullMQ counts a job's age in whole seconds.
    this.finishedJobRetentionS = Math.ceil((options.finishedJobRetentionMs ?? FINISHED_JOB_RETENTION_S * 1000) / 1000);
    this.keys = redisKeys(options.prefix);
    this.resultsKey = this.keys.results(this.coordinatorId);
    const target = options.target ?? (options.redisUrl ? { url: options.redisUrl } : undefined);
    if (!target) throw new Error('a QueueExecutor needs redisUrl or target');
    // Commands wait through a reconnect instead of failing (a Redis restart is survivable).
    this.redis = connectRedis(target, { ...options.connection, maxRetriesPerRequest: null });
    // The jobs and cancels of one burst of rounds go out in one socket write.
    coalesceWrites(this.redis);
    this.redis.on('error', this.onError);
    this.committedOutcomes = new CommittedOutcomes(
      this.redis,
      this.keys,
      options.outcomeAfterCommitTtlMs ?? OUTCOME_AFTER_COMMIT_TTL_MS,
    );
    this.results = new ResultsReader({
      redis: this.redis,
      key: this.resultsKey,
      consumer: this.coordinatorId,
      // Idempotent result handling: a result for a call no longer waiting (answered, cancelled) is dropped.
      onOutcome: (callId, outcome) => this.pending.get(callId)?.settle(outcome),
      onAsk: (callId, question) => {
        const context = { redis: this.redis, keys: this.keys, coordinatorId: this.coordinatorId };
        answerQuestion(context, this.pending.get(callId), callId, question).catch(this.onError);
      },
      onError: this.onError,
    });
    this.queueShards = options.queueShards ?? 1;
    const onShardMismatch = options.onShardMismatch ?? ((line: string) => this.onError(new Error(line)));
    this.workers = new WorkerDirectory(this.redis, this.keys, options.handlerCacheMs ?? 1_000, {
      queueShards: this.queueShards,
      onMismatch: onShardMismatch,
    });
    const queues = (cls: QueueClass) =>
      shardQueueNames(cls, this.queueShards).map((name) => {
        const q = new Queue(name, { connection: this.redis, prefix: options.prefix });
        q.on('error', this.onError);
        return q;
      });
    this.queues = { concurrent: queues('concurrent'), serial: queues('serial') };
    this.ready = this.init();
    this.ready.catch(() => undefined);
    this.poller = setInterval(() => {
      this.checkPending().catch(this.onError);
      this.committedOutcomes.shorten().catch(this.onError);
    }, this.pollIntervalMs);
  }

  /**
   * The outcome hashes of a committed round's calls are cut down to OUTCOME_AFTER_COMMIT_TTL_MS, at
   * the next poll (CommittedOutcomes).
   */
  committed(round: string, callIndexes: readonly number[], origin?: string): void {
    this.committedOutcomes.add(origin ?? this.coordinatorId, round, callIndexes);
  }

  /** Union of the handler names announced by live workers (WorkerDirectory.handlerNames). */
  handlerNames(): Promise<ReadonlySet<string>> {
    return this.workers.handlerNames();
  }

  /** The MCP tools live workers announce (WorkerDirectory.announcedTools). */
  announcedTools(): readonly AnnouncedTool[] | Promise<readonly AnnouncedTool[]> {
    return this.workers.announcedTools();
  }

  /** How many workers announced themselves within their TTL (0 while Redis is unreachable, for /readyz). */
  workersAlive(): Promise<number> {
    return this.workers.workersAlive();
  }

  /** The announcements of live workers (id, handlers, concurrency, host). */
  liveWorkers(): Promise<WorkerAnnouncement[]> {
    return this.workers.liveWorkers();
  }

  /** Resolves once the results stream is being read and the queues are connected. */
  waitUntilReady(): Promise<void> {
    return this.ready;
  }

  async execute(job: ExecJob, signal: AbortSignal, options?: ExecuteOptions): Promise<ExecOutcome> {
    const started = Date.now();
    const cancelled = (): ExecOutcome => failedOutcome('run_cancelled', 'the call was cancelled', Date.now() - started);
    if (signal.aborted) return cancelled();
    const callId = callIdFor(job.round, job.callIndex);
    const joined = this.pending.get(callId);
    if (joined) return raceAbort(joined.promise, signal, cancelled);

    let settle: (outcome: ExecOutcome) => void = () => {};
    const promise = new Promise<ExecOutcome>((resolve) => {
      settle = resolve;
    });
    const entry: Pending = {
      job,
      callId,
      origin: job.origin ?? this.coordinatorId,
      enqueuedAt: started,
      lastCheckedAt: started,
      promise,
      shard: shardOf(job.session, job.run, this.queueShards),
      signal,
      asking: 0,
      askedMs: 0,
      ...(options?.requestInput ? { requestInput: options.requestInput } : {}),
      settle: (outcome) => {
        if (this.pending.get(callId) === entry) this.pending.delete(callId);
        settle(outcome);
      },
    };
    this.pending.set(callId, entry);
    const onAbort = () => {
      if (this.pending.get(callId) !== entry) return;
      entry.cancelled = true;
      entry.settle(cancelled());
      this.cancelCall(entry).catch(this.onError);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await raceAbort(this.gatherer.gather(entry), signal, () => undefined);
      return await promise;
    } catch (e) {
      entry.settle(failedOutcome('handler_threw', 'enqueue failed', 0));
      throw new DispatchError('queue_unavailable', `could not enqueue ${job.name}: ${(e as Error).message}`, {
        cause: e,
      });
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.poller);
    for (const entry of [...this.pending.values()]) {
      entry.settle(failedOutcome('run_cancelled', 'the coordinator is shutting down', 0));
    }
    const connected = this.redis.status === 'ready';
    // With Redis unreachable, ioredis may never settle a command that was in flight, and BullMQ's
    // close waits for a reconnect that may never come: bound both, then drop the connections.
    const bound = connected ? 10_000 : 1_000;
    await this.results.stop(bound);
    await Promise.all(this.allQueues().map((q) => settleWithin(connected ? q.close() : q.disconnect(), bound)));
    if (!connected) {
      this.redis.disconnect();
      return;
    }
    await settleWithin(this.committedOutcomes.shorten().catch(this.onError), bound);
    // Nothing waits on this coordinator's results any more.
    await this.redis.del(this.resultsKey).catch(() => undefined);
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async init(): Promise<void> {
    await this.results.start();
    await Promise.all(this.allQueues().map((q) => q.waitUntilReady()));
  }

  /** Every BullMQ queue of both classes, each shard's. */
  allQueues(): Queue[] {
    return [...this.queues.concurrent, ...this.queues.serial];
  }

  /** The BullMQ queue of a class's shard (shard 0: the only one, without TD_QUEUE_SHARDS). */
  queueOf(cls: QueueClass, shard = 0): Queue {
    const queue = this.queues[cls][shard];
    if (!queue) throw new RangeError(`no shard ${shard} of the ${cls} queue (${this.queueShards} shards)`);
    return queue;
  }

  private async enqueue(gathered: readonly Pending[]): Promise<void> {
    await this.ready;
    // Calls cancelled while gathering are not sent.
    const calls = gathered.filter((c) => this.pending.get(c.callId) === c);
    const first = calls[0]?.job;
    if (!first) return;
    const shard = (calls[0] as Pending).shard;
    const carrier: SentCarrier = { id: carrierJobId(calls), queue: first.queue, shard, calls };
    for (const c of calls) c.carrier = carrier;
    await this.addCarrier(carrier);
  }

  /** Adds a carrier's BullMQ job (its calls of this coordinator's rounds marked as carried by it first). */
  private async addCarrier(carrier: SentCarrier): Promise<void> {
    const { calls } = carrier;
    const first = (calls[0] as Pending).job;
    const payload = encodeQueuedJob({
      calls: calls.map((c) => c.job),
      replyTo: this.resultsKey,
      coordinator: this.coordinatorId,
    });
    const names = jobNameFor(this.jobName, calls);
    // Concurrent calls of this coordinator's own rounds are marked as carried by this job before it
    // is added (same connection, so Redis has the marks first): its worker skips the start check.
    const marked =
      first.queue === 'concurrent' && calls.every((c) => c.job.origin === undefined)
        ? runScript(this.redis, markCarriedScript, ...markCarriedInput(this.keys, this.coordinatorId, carrier)).then(
            parseMarkCarriedReply,
          )
        : undefined;
    // Idempotent enqueue: BullMQ ignores an add whose job id exists, and a worker never runs a call
    // whose outcome is recorded (it sends that outcome again). A call answered by a job that is
    // already done (a takeover) is found by the poll of outcome hashes.
    const added = this.queueOf(first.queue, carrier.shard).add(names, payload, {
      jobId: carrier.id,
      attempts: MAX_STARTS[first.queue],
      removeOnComplete: { age: this.finishedJobRetentionS },
      removeOnFail: { age: OUTCOME_TTL_MS / 1000 },
    });
    await Promise.all([marked, added]);
  }

  /**
   * Leaves a mark a worker checks before it starts the call, and tells the worker running it to
   * abort. The job leaves the queue only when all its calls are cancelled (never a sibling's).
   */
  private async cancelCall(entry: Pending): Promise<void> {
    const { job, callId, carrier } = entry;
    await this.redis.set(this.keys.cancel(entry.origin, callId), '1', 'PX', CANCEL_TTL_MS);
    if (carrier?.calls.every((c) => c.cancelled)) {
      const removed = await this.queueOf(carrier.queue, carrier.shard)
        .remove(carrier.id)
        .catch(() => 0);
      if (removed === 1) return;
    }
    const message: CancelMessage = { callId, queue: job.queue };
    await this.redis.publish(this.keys.cancelChannel(), JSON.stringify(message));
  }

  /** The safety net: calls waiting a while are looked up in Redis (outcome field, then the job itself). */
  private async checkPending(): Promise<void> {
    const now = Date.now();
    const due = [...this.pending.values()].filter((p) => now - p.lastCheckedAt >= this.pollIntervalMs);
    if (due.length === 0) return;
    const context: LookUpContext = {
      redis: this.redis,
      keys: this.keys,
      queueOf: (cls, shard) => this.queueOf(cls, shard),
      isWaiting: (c) => this.pending.get(c.callId) === c,
      overdueGraceMs: this.overdueGraceMs,
      resendLostJobs: this.resendLostJobs,
    };
    const resend = new Set<SentCarrier>();
    await Promise.all(
      due.map(async (entry) => {
        entry.lastCheckedAt = now;
        const verdict = await lookUpPending(context, entry, now);
        if (verdict === RESEND && entry.carrier) resend.add(entry.carrier);
        else if (verdict && verdict !== RESEND) entry.settle(verdict);
      }),
    );
    await Promise.all([...resend].map((carrier) => this.resend(carrier)));
  }

  /**
   * Enqueues again a job Redis lost (a failover to a replica that never had it) whose calls never
   * started (lookUpPending's RESEND), under the same job id: a worker still checks each call's
   * outcome field before it runs it, so nothing answered runs again.
   */
  private async resend(carrier: SentCarrier): Promise<void> {
    const calls = carrier.calls.filter((c) => this.pending.get(c.callId) === c);
    if (calls.length === 0) return;
    for (const c of calls) c.resent = (c.resent ?? 0) + 1;
    this.onError(new Error(`job ${carrier.id} was lost by Redis before its calls started: enqueued again`));
    await this.addCarrier({ ...carrier, calls });
  }
}
