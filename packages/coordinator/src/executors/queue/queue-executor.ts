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
  type InputReply,
  type InputRequester,
  type QueueClass,
} from '@tool-dispatch/shared';
import {
  type AnswerMessage,
  type AskMessage,
  batchJobIdFor,
  CANCEL_TTL_MS,
  type CancelMessage,
  coalesceWrites,
  connectRedis,
  encodeQueuedJob,
  FINISHED_JOB_RETENTION_S,
  JOB_LOCK_MS,
  jobIdFor,
  MAX_STALLED,
  OUTCOME_AFTER_COMMIT_TTL_MS,
  OUTCOME_TTL_MS,
  parseOutcome,
  type RedisClient,
  type RedisConnectionOptions,
  type RedisKeys,
  type RedisTarget,
  RUNNING_MARK,
  redisKeys,
  STALLED_INTERVAL_MS,
  STALLED_REASON,
  shardOf,
  shardQueueNames,
  tryParseJson,
  type WorkerAnnouncement,
} from '@tool-dispatch/shared/redis';
import { type Job, Queue } from 'bullmq';
import { getOrCreate } from '../../support/maps.js';
import { runScript } from '../../support/redis-client.js';
import { settleWithin } from '../../support/settle.js';
import { markCarriedScript } from './lua/markCarried-n.lua.js';
import { shortenOutcomesScript } from './lua/shortenOutcomes-n.lua.js';
import { ResultsReader } from './results-reader.js';
import { WorkerDirectory } from './worker-directory.js';

export interface QueueExecutorOptions {
  /** One Redis (REDIS_URL); or `target`. */
  redisUrl?: string;
  /** One Redis or a cluster (REDIS_CLUSTER_NODES); wins over redisUrl. */
  target?: RedisTarget;
  /** TLS and the like for every connection (`redisConnectionOptions`); duplicates inherit it. */
  connection?: RedisConnectionOptions;
  /** TD_PREFIX: BullMQ's prefix and the prefix of every key. */
  prefix: string;
  /** Names this coordinator's results stream; default `c-<host>-<pid>-<random>`, no colons. */
  coordinatorId?: string;
  /** How often calls waiting longer than this are checked against Redis (safety net; default 1 s). */
  pollIntervalMs?: number;
  /**
   * How long past a call's deadline the coordinator keeps waiting before it decides for itself
   * (default: enough for a dead worker's lock to expire and the stalled check to notice twice).
   */
  overdueGraceMs?: number;
  /** How long handlerNames() reuses what it read before reading again (default 1 s). */
  handlerCacheMs?: number;
  /** Called with infrastructure errors it recovers from (Redis reconnecting and the like). */
  onError?: (error: Error) => void;
  /**
   * TD_QUEUE_SHARDS (default 1): each queue is this many BullMQ queues, each its own hash slot; a
   * run's jobs all go to the shard `shardOf` its session and run.
   */
  queueShards?: number;
  /** TD_JOB_NAME: each job's name from `{tools}`, `{session}`, `{run}`, `{round}`, `{queue}` (default `{tools}`). */
  jobName?: string;
  /** Where a live worker consuming another number of shards is said (once per worker); default onError. */
  onShardMismatch?: (line: string) => void;
  /** How long BullMQ keeps a completed job (TD_FINISHED_JOB_RETENTION_MS; default FINISHED_JOB_RETENTION_S). */
  finishedJobRetentionMs?: number;
  /** How long a committed round's outcome keys stay (TD_OUTCOME_AFTER_COMMIT_TTL_MS; default OUTCOME_AFTER_COMMIT_TTL_MS). */
  outcomeAfterCommitTtlMs?: number;
}

/** How long runJob gives a stopped handler to wind down before reporting (execute-job.ts SETTLE_GRACE_MS). */
const WORKER_SETTLE_MS = 2_000;
/** The most calls one job carries (a tick's concurrent calls beyond it go in further jobs). */
const MAX_CALLS_PER_JOB = 64;
/** Outcome keys per shortenOutcomes script: each call of it holds Redis for well under a millisecond. */
const SHORTEN_CHUNK = 500;

interface Pending {
  job: ExecJob;
  /** The call's id (jobIdFor): its outcome key, cancel mark and results messages. */
  jobId: string;
  /** Whose namespace holds its outcome key and cancel mark (ExecJob.origin). */
  origin: string;
  enqueuedAt: number;
  lastCheckedAt: number;
  settle(outcome: ExecOutcome): void;
  promise: Promise<ExecOutcome>;
  /** Its run's shard of the queues (shardOf). */
  shard: number;
  /** The BullMQ job carrying it, once enqueued. */
  carrier?: Carrier;
  cancelled?: boolean;
  /** Whom its questions go to (an MCP elicitation), and the run's signal they wait under. */
  requestInput?: InputRequester;
  signal: AbortSignal;
  /** Questions waiting for their answer now: the deadline stands still meanwhile, as on the worker. */
  asking: number;
  /** Time its questions waited, added to its deadline. */
  askedMs: number;
}

/** One BullMQ job: a serial call, or the concurrent calls admitted together (of one round or several). */
interface Carrier {
  jobId: string;
  queue: QueueClass;
  shard: number;
  calls: readonly Pending[];
}

/** Calls admitted in the same tick, gathered into one job. */
interface Gathering {
  calls: Pending[];
  enqueued: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Pass 2 over BullMQ: enqueues calls on the concurrent or serial queue under idempotent job ids,
 * and waits for each outcome on this coordinator's results stream (a Redis stream with a
 * consumer group), with a poll of outcome keys and job states as the safety net. Concurrent
 * calls of one round admitted in the same tick (the run's limit already applied) share one
 * job; each keeps its own deadline, cancel and outcome.
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
  private readonly onError: (error: Error) => void;
  private readonly finishedJobRetentionS: number;
  private readonly outcomeAfterCommitTtlMs: number;
  private readonly pending = new Map<string, Pending>();
  private readonly gathering = new Map<string, Gathering>();
  /** Outcome keys of committed rounds, by namespace (coordinator), to shorten at the next poll. */
  private readonly committedOutcomes = new Map<string, string[]>();
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
    this.overdueGraceMs = options.overdueGraceMs ?? 2 * JOB_LOCK_MS + 2 * STALLED_INTERVAL_MS + WORKER_SETTLE_MS;
    this.onError = options.onError ?? (() => {});
    // BullMQ counts a job's age in whole seconds.
    this.finishedJobRetentionS = Math.ceil((options.finishedJobRetentionMs ?? FINISHED_JOB_RETENTION_S * 1000) / 1000);
    this.outcomeAfterCommitTtlMs = options.outcomeAfterCommitTtlMs ?? OUTCOME_AFTER_COMMIT_TTL_MS;
    this.keys = redisKeys(options.prefix);
    this.resultsKey = this.keys.results(this.coordinatorId);
    const target = options.target ?? (options.redisUrl ? { url: options.redisUrl } : undefined);
    if (!target) throw new Error('a QueueExecutor needs redisUrl or target');
    // Commands wait through a reconnect instead of failing (a Redis restart is survivable).
    this.redis = connectRedis(target, { ...options.connection, maxRetriesPerRequest: null });
    // The jobs and cancels of one burst of rounds go out in one socket write.
    coalesceWrites(this.redis);
    this.redis.on('error', this.onError);
    this.results = new ResultsReader({
      redis: this.redis,
      key: this.resultsKey,
      consumer: this.coordinatorId,
      // Idempotent result handling: a result for a call no longer waiting (answered, cancelled) is dropped.
      onOutcome: (jobId, outcome) => this.pending.get(jobId)?.settle(outcome),
      onAsk: (jobId, question) => {
        this.answerQuestion(jobId, question).catch(this.onError);
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
      this.shortenCommitted().catch(this.onError);
    }, this.pollIntervalMs);
  }

  /**
   * The outcome keys of a committed round's calls are cut down to OUTCOME_AFTER_COMMIT_TTL_MS, at
   * the next poll (one script per namespace and at most SHORTEN_CHUNK keys, whatever the load).
   */
  committed(round: string, callIndexes: readonly number[], origin?: string): void {
    const namespace = origin ?? this.coordinatorId;
    const keys = getOrCreate(this.committedOutcomes, namespace, () => []);
    for (const i of callIndexes) keys.push(this.keys.outcome(namespace, jobIdFor(round, i)));
  }

  private async shortenCommitted(): Promise<void> {
    if (this.committedOutcomes.size === 0) return;
    const due = [...this.committedOutcomes.values()];
    this.committedOutcomes.clear();
    for (const keys of due) {
      for (let i = 0; i < keys.length; i += SHORTEN_CHUNK) {
        await runScript(this.redis, shortenOutcomesScript, keys.slice(i, i + SHORTEN_CHUNK), [
          this.outcomeAfterCommitTtlMs,
        ]);
      }
    }
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
    const jobId = jobIdFor(job.round, job.callIndex);
    const joined = this.pending.get(jobId);
    if (joined) return raceAbort(joined.promise, signal, cancelled);

    let settle: (outcome: ExecOutcome) => void = () => {};
    const promise = new Promise<ExecOutcome>((resolve) => {
      settle = resolve;
    });
    const entry: Pending = {
      job,
      jobId,
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
        if (this.pending.get(jobId) === entry) this.pending.delete(jobId);
        settle(outcome);
      },
    };
    this.pending.set(jobId, entry);
    const onAbort = () => {
      if (this.pending.get(jobId) !== entry) return;
      entry.cancelled = true;
      entry.settle(cancelled());
      this.cancelCall(entry).catch(this.onError);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await raceAbort(this.gather(entry), signal, () => undefined);
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
    await settleWithin(this.shortenCommitted().catch(this.onError), bound);
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

  /**
   * Adds a call to the job of this tick, enqueued once every call admitted in this tick has joined:
   * the concurrent calls of all rounds admitted together (each run's limit already applied) share
   * one job, up to MAX_CALLS_PER_JOB; a serial call is a job of its own.
   */
  private gather(entry: Pending): Promise<void> {
    const { job } = entry;
    // A serial call always runs alone (DESIGN.md pass 2), so it is a job of its own. A takeover's
    // calls (origin) travel apart: their worker checks them before it starts them.
    // A job is of one shard: calls of runs on different shards gather apart.
    const key =
      job.queue === 'serial' ? `serial\u0000${entry.jobId}` : `concurrent\u0000${entry.shard}\u0000${job.origin ?? ''}`;
    let gathering = this.gathering.get(key);
    if (!gathering) {
      let resolve: () => void = () => {};
      let reject: (error: unknown) => void = () => {};
      const enqueued = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      gathering = { calls: [], enqueued, resolve, reject };
      this.gathering.set(key, gathering);
      const ready = gathering;
      // After the microtasks of this tick: every call the run's limiter admitted with this one has joined.
      process.nextTick(() => {
        if (this.gathering.get(key) === ready) this.gathering.delete(key);
        this.enqueue(ready.calls).then(ready.resolve, ready.reject);
      });
    }
    gathering.calls.push(entry);
    // Full: the next call of this tick starts another job (this one still goes at the tick's end).
    if (gathering.calls.length >= MAX_CALLS_PER_JOB && this.gathering.get(key) === gathering)
      this.gathering.delete(key);
    return gathering.enqueued;
  }

  private async enqueue(gathered: readonly Pending[]): Promise<void> {
    await this.ready;
    // Calls cancelled while gathering are not sent.
    const calls = gathered.filter((c) => this.pending.get(c.jobId) === c);
    const first = calls[0]?.job;
    if (!first) return;
    const shard = (calls[0] as Pending).shard;
    const carrier: Carrier = { jobId: carrierJobId(calls), queue: first.queue, shard, calls };
    for (const c of calls) c.carrier = carrier;
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
        ? runScript(
            this.redis,
            markCarriedScript,
            calls.map((c) => this.keys.outcome(this.coordinatorId, c.jobId)),
            [RUNNING_MARK + carrier.jobId, OUTCOME_TTL_MS],
          )
        : undefined;
    // Idempotent enqueue: BullMQ ignores an add whose job id exists, and a worker never runs a call
    // whose outcome is recorded (it sends that outcome again). A call answered by a job that is
    // already done (a takeover) is found by the poll of outcome keys.
    const added = this.queueOf(first.queue, shard).add(names, payload, {
      jobId: carrier.jobId,
      attempts: 1,
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
    const { job, jobId, carrier } = entry;
    await this.redis.set(this.keys.cancel(entry.origin, jobId), '1', 'PX', CANCEL_TTL_MS);
    if (carrier?.calls.every((c) => c.cancelled)) {
      const removed = await this.queueOf(carrier.queue, carrier.shard)
        .remove(carrier.jobId)
        .catch(() => 0);
      if (removed === 1) return;
    }
    const message: CancelMessage = { jobId, queue: job.queue };
    await this.redis.publish(this.keys.cancelChannel(), JSON.stringify(message));
  }

  /**
   * A question a running call asked (ResultsReader.onAsk): parked through the call's asker, its
   * answer written beside the call's outcome key and published to the workers. A call with no
   * asker here (not waiting on this coordinator, or not one that may ask) is answered that nobody can.
   */
  private async answerQuestion(jobId: string, question: AskMessage): Promise<void> {
    const entry = this.pending.get(jobId);
    let reply: InputReply;
    if (!entry?.requestInput) reply = { error: 'nobody can answer questions of this call' };
    else {
      const asked = Date.now();
      entry.asking++;
      try {
        reply = await entry.requestInput(question.request, entry.signal);
      } finally {
        entry.asking--;
        entry.askedMs += Date.now() - asked;
      }
    }
    const origin = entry?.origin ?? this.coordinatorId;
    const message: AnswerMessage = { callId: jobId, n: question.n, reply };
    await this.redis
      .multi()
      .set(this.keys.answer(origin, jobId, question.n), JSON.stringify(reply), 'PX', OUTCOME_TTL_MS)
      .publish(this.keys.answerChannel(), JSON.stringify(message))
      .exec();
  }

  /** The safety net: calls waiting a while are looked up in Redis (outcome key, then the job itself). */
  private async checkPending(): Promise<void> {
    const now = Date.now();
    const due = [...this.pending.values()].filter((p) => now - p.lastCheckedAt >= this.pollIntervalMs);
    await Promise.all(
      due.map(async (entry) => {
        entry.lastCheckedAt = now;
        const verdict = await this.lookUp(entry, now);
        if (verdict) entry.settle(verdict);
      }),
    );
  }

  private async lookUp(entry: Pending, now: number): Promise<ExecOutcome | undefined> {
    const { job, jobId } = entry;
    const value = await this.redis.get(this.keys.outcome(entry.origin, jobId));
    const recorded = parseOutcome(tryParseJson(value));
    if (recorded) return recorded;
    // The job running the call names itself in the outcome key; before it starts, the job we enqueued.
    const carrierId = value?.startsWith(RUNNING_MARK)
      ? value.slice(RUNNING_MARK.length)
      : (entry.carrier?.jobId ?? jobId);
    const queue = this.queueOf(job.queue, entry.shard);
    const bullJob = (await queue.getJob(carrierId)) as Job | undefined;
    const elapsed = now - entry.enqueuedAt;
    if (bullJob?.finishedOn) {
      if (bullJob.failedReason) return this.failedOutcome(job, bullJob.failedReason, elapsed);
      const returned = parseOutcome((bullJob.returnvalue as Record<string, unknown> | null)?.[jobId]);
      if (returned) return returned;
    }
    // A call waiting for a person's answer is not overdue; the time its questions took is not its own.
    if (entry.asking > 0) return undefined;
    const perAttemptMs = job.timeoutMs + entry.askedMs + WORKER_SETTLE_MS + this.overdueGraceMs;
    if (!bullJob) {
      // Gone without an outcome: removed, or Redis restarted empty. Wait out every attempt's deadline first.
      const overdue = elapsed > (MAX_STALLED[job.queue] + 1) * perAttemptMs;
      return overdue ? lost(job, 'the job disappeared from the queue (was Redis restarted?)', elapsed) : undefined;
    }
    const startedAt = bullJob.processedOn;
    if (!startedAt) {
      // Nobody took the job within its calls' deadlines: it leaves the queue, and they all time out.
      const overdue = (c: Pending) => now - c.enqueuedAt > c.job.timeoutMs + WORKER_SETTLE_MS + this.overdueGraceMs;
      const waiting = (entry.carrier?.calls ?? [entry]).filter((c) => this.pending.get(c.jobId) === c);
      if (!overdue(entry) || !waiting.every(overdue)) return undefined;
      const removed = await queue.remove(carrierId).catch(() => 0);
      if (removed !== 1) return undefined;
      for (const c of waiting) if (c !== entry) c.settle(notStarted(c.job, now - c.enqueuedAt));
      return notStarted(job, elapsed);
    }
    if (now - startedAt <= perAttemptMs) return undefined;
    return lost(job, 'no worker reported it past its deadline', elapsed);
  }

  private failedOutcome(job: ExecJob, failedReason: string, elapsed: number): ExecOutcome {
    if (failedReason === STALLED_REASON) return lost(job, 'its worker died', elapsed);
    return failedOutcome('handler_threw', failedReason, elapsed);
  }
}

/**
 * A job's id from the calls it carries (idempotent enqueue): `<round>-<i>.<j>…` per round, in the
 * order the rounds joined, joined by `+`.
 */
function carrierJobId(calls: readonly Pending[]): string {
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

function notStarted(job: ExecJob, durationMs: number): ExecOutcome {
  const why = `no worker started ${job.name} within its deadline of ${job.timeoutMs} ms (are workers running?)`;
  return failedOutcome('deadline', why, durationMs);
}

function lost(job: ExecJob, why: string, durationMs: number): ExecOutcome {
  const rerun = job.queue === 'serial' ? 'it was not re-run' : 'it was retried at most once';
  return failedOutcome('worker_died', `${job.name}: ${why}; the outcome is unknown and ${rerun}`, durationMs);
}

function raceAbort<T, U>(promise: Promise<T>, signal: AbortSignal, onAbort: () => U): Promise<T | U> {
  if (signal.aborted) return Promise.resolve(onAbort());
  let listener: () => void = () => {};
  const aborted = new Promise<U>((resolve) => {
    listener = () => resolve(onAbort());
    signal.addEventListener('abort', listener, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', listener));
}
