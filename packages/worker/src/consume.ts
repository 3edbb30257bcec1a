import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ExecJob, ExecOutcome, HandlerConfig, InputRequester, QueueClass } from '@tool-dispatch/shared';
import { DEFAULT_WORKER_SERIAL_CONCURRENCY, failedOutcome } from '@tool-dispatch/shared';
import {
  type AnswerMessage,
  type AskMessage,
  type CancelMessage,
  checkDeployment,
  coalesceWrites,
  connectRedis,
  DuePerKey,
  duplicateClient,
  FINISHED_JOB_RETENTION_S,
  JOB_LOCK_MS,
  jobIdFor,
  MAX_STALLED,
  OUTCOME_TTL_MS,
  parseInputReply,
  parseOutcome,
  parseQueuedJob,
  type QueuedJob,
  RESULTS_STREAM_TTL_MS,
  type RedisClient,
  type RedisConnectionOptions,
  type RedisKeys,
  type RedisTarget,
  RUNNING_MARK,
  redisKeys,
  runScript,
  STALLED_INTERVAL_MS,
  STALLED_REASON,
  shardQueueNames,
  tryParseJson,
  WORKER_HEARTBEAT_MS,
  type WorkerAnnouncement,
} from '@tool-dispatch/shared/redis';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  type Attributes,
  globalTracing,
  MESSAGING_SYSTEM_BULLMQ,
} from '@tool-dispatch/shared/tracing';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { runJob } from './execute-job.js';
import { parseRecordOutcomesReply, recordOutcomesScript } from './lua/recordOutcomes-n.lua.js';
import { parseReportOutcomesReply, reportOutcomesScript } from './lua/reportOutcomes-1n.lua.js';
import {
  parseStartCallsReply,
  type StartCallReply,
  StartCallsStatus,
  startCallsScript,
} from './lua/startCalls-2n.lua.js';
import type { McpHub } from './mcp/hub.js';
import type { WorkerMetrics } from './metrics.js';
import { Questions } from './questions.js';
import type { HandlerRegistry } from './registry.js';
import { RunningCalls } from './running-calls.js';
import { Slots } from './slots.js';
import { StuckConsumerWatch, type WatchedConsumer } from './stuck-consumers.js';

export interface StartWorkerOptions {
  /** One Redis (REDIS_URL); ignored when `target` is given. */
  redisUrl: string;
  /** One Redis or a cluster (REDIS_CLUSTER_NODES). */
  target?: RedisTarget;
  /** TLS and the like for every connection (`redisConnectionOptions`); BullMQ's duplicates inherit it. */
  connection?: RedisConnectionOptions;
  /** TD_PREFIX: BullMQ's prefix and the prefix of every key. */
  prefix: string;
  registry: HandlerRegistry;
  config: HandlerConfig;
  /**
   * Concurrent-queue calls running at once (TD_WORKER_CONCURRENCY), and jobs taken at once (a job
   * carries one call or a batch of one round's calls).
   */
  concurrency: number;
  /**
   * Serial-queue jobs running at once (TD_WORKER_SERIAL_CONCURRENCY, default 8), each one call.
   * They are of different runs: the coordinator never has two serial calls of a run in flight.
   */
  serialConcurrency?: number;
  /**
   * TD_QUEUE_SHARDS (default 1): it consumes every shard of each queue, a BullMQ worker per shard,
   * the class's job limit split between them; its calls stay capped at `concurrency` and
   * `serialConcurrency` over all shards.
   */
  queueShards?: number;
  /** Where a TD_QUEUE_SHARDS mismatch with the deployment's record is said at start. */
  log?: (line: string) => void;
  /** Defaults to `w-<host>-<pid>-<random>`; no colons. */
  id?: string;
  metrics?: WorkerMetrics;
  /** Lock of an active job (default JOB_LOCK_MS); a dead worker's jobs stall after it. */
  lockDurationMs?: number;
  /** Stalled-job check period (default STALLED_INTERVAL_MS). */
  stalledIntervalMs?: number;
  /** Liveness announcement period (default WORKER_HEARTBEAT_MS); the announcement lives 3 periods. */
  heartbeatMs?: number;
  /** Called with infrastructure errors (Redis, BullMQ); they never end the worker. */
  onError?: (error: Error) => void;
  /**
   * The process's MCP servers (TD_MCP_CONFIG): their tools and states go out with every
   * announcement, and a change (a server up or down, a `list_changed`) is announced at once.
   * The registry must have it as a source (`registry.addSource`).
   */
  mcp?: McpHub;
}

export interface RunningWorker {
  readonly id: string;
  /** Stops taking jobs, lets the active ones finish and report, then leaves. */
  close(): Promise<void>;
}

const QUEUE_CLASSES = ['concurrent', 'serial'] as const satisfies readonly QueueClass[];
/** Results streams are capped (approximately) so a coordinator that never reads cannot grow one forever. */
const RESULTS_STREAM_MAXLEN = 100_000;

/**
 * Starts a worker process's consumers: the concurrent queue (`concurrency` calls at once) and the
 * serial queue (`serialConcurrency` calls at once, of different runs). Each job's calls are run
 * through `runJob` and each outcome is reported to the owning coordinator's results stream as soon
 * as it is known. Resolves once both consumers and the cancel subscription are ready and the
 * worker has announced itself.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const resolved = resolveStartWorkerOptions(options);
  const { id, prefix, registry, config, metrics, onError, mcp } = resolved;
  // Every handler's counts show from the first scrape, at 0 (not "No data" on a dashboard).
  metrics?.knownTools(registry.names());
  const keys = redisKeys(prefix);
  // BullMQ workers block on their connection and need maxRetriesPerRequest: null (retry forever).
  const target = resolved.target ?? { url: resolved.redisUrl };
  const redis = connectRedis(target, { ...resolved.connection, maxRetriesPerRequest: null });
  // BullMQ's job moves and our start checks and reports of one burst go out in one socket write.
  coalesceWrites(redis);
  const subscriber = duplicateClient(redis);
  redis.on('error', onError);
  subscriber.on('error', onError);
  const reporter = new Reporter(redis, keys);
  const startedAt = Date.now();
  const limits: Record<QueueClass, number> = {
    concurrent: resolved.concurrency,
    serial: resolved.serialConcurrency,
  };
  const slots: Record<QueueClass, Slots> = {
    concurrent: new Slots(limits.concurrent),
    serial: new Slots(limits.serial),
  };
  const running = new RunningCalls();
  const questions = new Questions(redis, keys);

  const consumers: WatchedConsumer[] = [];
  for (const queue of QUEUE_CLASSES) {
    const processCalls = async (
      bullJob: Job,
      _token?: string,
      signal?: AbortSignal,
    ): Promise<Record<string, ExecOutcome>> => {
      const queued = parseQueuedJob(bullJob.data);
      const jobId = bullJob.id;
      if (!queued || jobId === undefined) throw new UnrecoverableError('not a tool-dispatch job payload');
      const carrier = { id: jobId, addedAtMs: bullJob.timestamp, queueName: bullJob.queueName };
      return runQueued(
        queued,
        carrier,
        signal ?? new AbortController().signal,
        needsStartCheck(queue, bullJob, queued),
      );
    };
    const names = shardQueueNames(queue, resolved.queueShards);
    for (const [shard, name] of names.entries()) {
      // A serial job is one call, so for the serial queue jobs and slots are the same number.
      const concurrency = shareOf(limits[queue], shard, names.length);
      const make = (): Worker => {
        const worker = new Worker(
          name,
          async function takeJob(bullJob: Job, token?: string, signal?: AbortSignal) {
            consumer.active++;
            consumer.takenAt = Date.now();
            try {
              return await processCalls(bullJob, token, signal);
            } finally {
              consumer.active--;
            }
          },
          {
            connection: redis,
            // The queue names carry hash tags: each queue's keys are one Redis Cluster slot.
            prefix,
            name: id,
            concurrency,
            lockDuration: resolved.lockDurationMs,
            stalledInterval: resolved.stalledIntervalMs,
            // DESIGN.md failure semantics: concurrent calls are retried once on worker death, serial never.
            maxStalledCount: MAX_STALLED[queue],
            removeOnComplete: { age: FINISHED_JOB_RETENTION_S },
            removeOnFail: { age: OUTCOME_TTL_MS / 1000 },
          },
        );
        worker.on('error', onError);
        worker.on('failed', function reportFailedJob(bullJob, error) {
          if (bullJob) reporter.reportFailure(bullJob, error, queue).catch(onError);
        });
        return worker;
      };
      // `make`'s processor counts on `consumer`, which exists before any job can arrive.
      const consumer: WatchedConsumer = {
        queueName: name,
        concurrency,
        active: 0,
        takenAt: Date.now(),
        worker: make(),
        make,
      };
      consumers.push(consumer);
    }
  }
  const stuck = new StuckConsumerWatch({
    redis,
    prefix,
    consumers,
    log: resolved.log,
    onError,
  });

  /**
   * Runs a job's calls side by side, each with its own deadline and cancel, a failure never
   * taking a sibling down; returns the outcomes by call id (the job's return value, a safety
   * net for a coordinator that missed a report).
   */
  async function runQueued(
    queued: QueuedJob,
    carrier: Carrier,
    signal: AbortSignal,
    checkStart: boolean,
  ): Promise<Record<string, ExecOutcome>> {
    const jobId = carrier.id;
    const calls = queued.calls.map((job) => ({
      job,
      callId: jobIdFor(job.round, job.callIndex),
      origin: job.origin ?? queued.coordinator,
      stop: new AbortController(),
    }));
    // Listening before the start check: a cancel published after it is heard, one before it left its mark.
    for (const c of calls) running.add(c.callId, c.stop);
    // BullMQ's own stop (the job's) stops every call of it.
    const stopAll = () => {
      for (const c of calls) c.stop.abort(signal.reason);
    };
    if (signal.aborted) stopAll();
    else signal.addEventListener('abort', stopAll, { once: true });
    const outcomes: Record<string, ExecOutcome> = {};
    const report = reporter.forJob(queued, jobId);
    try {
      const starts: (StartCallReply | undefined)[] = checkStart
        ? await reporter.start(calls, jobId)
        : calls.map(() => StartCallsStatus.Run);
      // Every call runs to its end even when a sibling's report fails; then the job fails with it.
      const settled = await Promise.allSettled(
        calls.map(async function runOneCall(c, i) {
          const start = starts[i];
          // Another job runs this call (a takeover grouped the calls differently): its report stands.
          if (start === StartCallsStatus.Elsewhere || start === undefined) return;
          if (typeof start === 'object') {
            const recorded = parseOutcome(tryParseJson(start.recorded));
            if (!recorded) return;
            // Run before (an earlier attempt, or another job): sent again, in case that report was lost.
            outcomes[c.callId] = recorded;
            return report(c, recorded, { recorded: true });
          }
          const outcome: ExecOutcome =
            start === StartCallsStatus.Cancelled
              ? failedOutcome('run_cancelled', 'the call was cancelled before it started', 0, { ranOn: id })
              : await runCall(c.job, carrier, c.stop, askerFor(queued.replyTo, c));
          outcomes[c.callId] = outcome;
          await report(c, outcome);
        }),
      );
      const failed = settled.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      return outcomes;
    } finally {
      signal.removeEventListener('abort', stopAll);
      for (const c of calls) running.remove(c.callId, c.stop);
    }
  }

  /**
   * A call's question asker (an MCP elicitation): the question goes to the coordinator waiting
   * for the call, on its results stream, and the answer comes back on the answer channel.
   */
  function askerFor(replyTo: string, call: CallRef): InputRequester {
    let asked = 0;
    return async function askCoordinator(request, signal) {
      asked += 1;
      const answer = questions.wait(call.origin, call.callId, asked, signal);
      const question: AskMessage = { n: asked, request };
      await redis.xadd(
        replyTo,
        'MAXLEN',
        '~',
        RESULTS_STREAM_MAXLEN,
        '*',
        'ask',
        call.callId,
        'question',
        JSON.stringify(question),
      );
      return answer;
    };
  }

  async function runCall(
    job: ExecJob,
    carrier: Carrier,
    stop: AbortController,
    requestInput: InputRequester,
  ): Promise<ExecOutcome> {
    const signal = stop.signal;
    const spanAttributes = globalTracing() ? messagingAttributes(carrier.queueName, carrier.id) : undefined;
    const release = slots[job.queue].tryAcquire() ?? (await slots[job.queue].acquire());
    // The call's wait, from its job's enqueue (the coordinator's clock) to now (a slot of this worker free).
    const options = spanAttributes
      ? { spanAttributes, controller: stop, queuedAtMs: carrier.addedAtMs, requestInput }
      : { controller: stop, requestInput };
    try {
      const run = () => runJob(registry, job, signal, config, id, options);
      return await (metrics ? metrics.track(job.queue, job.name, run) : run());
    } finally {
      release();
    }
  }

  subscriber.on('message', function onWorkerMessage(channel: string, message: string) {
    if (channel === keys.answerChannel()) {
      const answer = tryParseJson(message) as AnswerMessage | undefined;
      if (answer && typeof answer.callId === 'string' && Number.isInteger(answer.n)) {
        const reply = parseInputReply(answer.reply);
        if (reply) questions.deliver({ callId: answer.callId, n: answer.n, reply });
      }
      return;
    }
    if (channel !== keys.cancelChannel()) return;
    const cancel = tryParseJson(message) as CancelMessage | undefined;
    if (!cancel || typeof cancel.jobId !== 'string') return;
    running.abort(cancel.jobId, new Error('cancelled by the coordinator'));
  });
  await subscriber.subscribe(keys.cancelChannel(), keys.answerChannel());
  await Promise.all(consumers.map((c) => c.worker.waitUntilReady()));
  const mismatch = await checkDeployment(redis, keys, { queueShards: resolved.queueShards, id, writer: false });
  if (mismatch) resolved.log(mismatch);

  const announce = () => {
    const now = Date.now();
    const announcement: WorkerAnnouncement = {
      id,
      handlers: [...registry.names()],
      concurrency: resolved.concurrency,
      serialConcurrency: resolved.serialConcurrency,
      queueShards: resolved.queueShards,
      pid: process.pid,
      host: hostname(),
      startedAt,
      at: now,
      ...(mcp ? { tools: mcp.tools(), mcp: mcp.status() } : {}),
    };
    const ttl = resolved.heartbeatMs * 3;
    return redis
      .multi()
      .set(keys.worker(id), JSON.stringify(announcement), 'PX', ttl)
      .zadd(keys.workersAlive(), now + ttl, id)
      .zremrangebyscore(keys.workersAlive(), '-inf', now)
      .pexpire(keys.workersAlive(), Math.max(ttl * 10, 60_000))
      .exec();
  };
  await announce();
  const heartbeat = setInterval(function heartbeatWorker() {
    announce().catch(onError);
  }, resolved.heartbeatMs);
  // An MCP change is announced at once (once for a burst of them), not at the next heartbeat.
  let announcing = false;
  const stopWatchingMcp = mcp?.onChange(function announceMcpChange() {
    if (announcing || closing) return;
    announcing = true;
    setImmediate(() => {
      announcing = false;
      if (!closing) announce().catch(onError);
    });
  });

  let closing: Promise<void> | undefined;
  return {
    id,
    close: () => {
      closing ??= (async () => {
        // Still announced while active jobs finish, so coordinators keep counting this worker.
        stuck.stop();
        await Promise.all(consumers.map((c) => c.worker.close()));
        // A replaced consumer's close may never settle (its connection is what got stuck).
        for (const w of stuck.retired) w.disconnect().catch(() => undefined);
        clearInterval(heartbeat);
        stopWatchingMcp?.();
        await redis
          .multi()
          .zrem(keys.workersAlive(), id)
          .del(keys.worker(id))
          .exec()
          .catch(() => undefined);
        subscriber.disconnect();
        await redis.quit().catch(() => redis.disconnect());
      })();
      return closing;
    },
  };
}

/** The BullMQ job carrying calls: its id, its queue (a shard's name), and when the coordinator added it. */
interface Carrier {
  id: string;
  addedAtMs: number;
  queueName: string;
}

/**
 * A shard's part of a class's job limit: `limit` split as evenly as it goes (the first shards take
 * the remainder), at least 1 each, so the worker takes about `limit` jobs over all shards.
 */
export function shareOf(limit: number, shard: number, shards: number): number {
  return Math.max(1, Math.floor(limit / shards) + (shard < limit % shards ? 1 : 0));
}

/** Messaging semantic conventions on the execute span: the call came off a BullMQ queue. */
function messagingAttributes(queueName: string, jobId: string): Attributes {
  return {
    [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM_BULLMQ,
    [ATTR_MESSAGING_DESTINATION_NAME]: queueName,
    [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
    [ATTR_MESSAGING_OPERATION_NAME]: 'process',
    [ATTR_MESSAGING_MESSAGE_ID]: jobId,
  };
}

type ResolvedStartWorkerOptions = Required<Omit<StartWorkerOptions, 'metrics' | 'mcp' | 'target'>> & {
  metrics: WorkerMetrics | undefined;
  mcp: McpHub | undefined;
  target: RedisTarget | undefined;
};

function resolveStartWorkerOptions(options: StartWorkerOptions): ResolvedStartWorkerOptions {
  const resolved = {
    ...options,
    id:
      options.id ?? `w-${hostname().replace(/[^A-Za-z0-9_.-]/g, '_')}-${process.pid}-${randomBytes(3).toString('hex')}`,
    metrics: options.metrics,
    mcp: options.mcp,
    target: options.target,
    connection: options.connection ?? {},
    serialConcurrency: options.serialConcurrency ?? DEFAULT_WORKER_SERIAL_CONCURRENCY,
    queueShards: options.queueShards ?? 1,
    log: options.log ?? (() => {}),
    lockDurationMs: options.lockDurationMs ?? JOB_LOCK_MS,
    stalledIntervalMs: options.stalledIntervalMs ?? STALLED_INTERVAL_MS,
    heartbeatMs: options.heartbeatMs ?? WORKER_HEARTBEAT_MS,
    onError: options.onError ?? (() => {}),
  };
  for (const k of ['concurrency', 'serialConcurrency', 'queueShards'] as const) {
    if (!Number.isInteger(resolved[k]) || resolved[k] < 1) {
      throw new Error(`worker ${k} must be a positive integer, got ${resolved[k]}`);
    }
  }
  if (resolved.id.includes(':')) throw new Error(`worker id ${resolved.id} must not contain ':'`);
  for (const k of ['lockDurationMs', 'stalledIntervalMs', 'heartbeatMs'] as const) {
    if (!(resolved[k] > 0)) throw new Error(`${k} must be positive, got ${resolved[k]}`);
  }
  return resolved;
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
function needsStartCheck(queue: QueueClass, bullJob: Job, queued: QueuedJob): boolean {
  if (queue === 'serial') return true;
  if (bullJob.attemptsStarted > 1 || bullJob.stalledCounter > 0) return true;
  return queued.calls.some((c) => c.origin !== undefined);
}

/** A call as the reporter sees it: its id, and whose namespace holds its outcome key and cancel mark. */
interface CallRef {
  readonly callId: string;
  readonly origin: string;
}

interface Report extends CallRef {
  json: string;
  /** Already recorded (by an earlier attempt): only sent again. */
  recorded: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

type ReportFn = (call: CallRef, outcome: ExecOutcome, options?: { recorded: boolean }) => Promise<void>;

/** Where a job's outcomes go: the results stream, and the namespace that shares its hash tag. */
interface ReplyTarget {
  replyTo: string;
  /** The origin whose outcome keys sit beside the stream (recorded and sent in one script); undefined if none. */
  home: string | undefined;
}

/** How often a results stream's TTL is pushed back (it expires RESULTS_STREAM_TTL_MS after that). */
const STREAM_EXPIRE_EVERY_MS = 60_000;

/**
 * Records each call's outcome once (its outcome key) and sends it to the owning coordinator's
 * results stream: one script when the outcome keys are the stream's coordinator's (the usual
 * case), else a record then a send. Outcomes of one job known in the same tick go out together.
 */
class Reporter {
  private readonly expiry = new DuePerKey(STREAM_EXPIRE_EVERY_MS);

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** Marks the job's calls running, or finds them cancelled, run before, or run by another job. */
  async start(calls: readonly CallRef[], jobId: string): Promise<(StartCallReply | undefined)[]> {
    const args = [RUNNING_MARK + jobId, OUTCOME_TTL_MS];
    const replies: (StartCallReply | undefined)[] = new Array(calls.length);
    const startInNamespace = async ([origin, indexes]: [string, number[]]) => {
      const keys = indexes.flatMap((i) => {
        const callId = (calls[i] as CallRef).callId;
        return [this.keys.cancel(origin, callId), this.keys.outcome(origin, callId)];
      });
      const got = parseStartCallsReply(await runScript(this.redis, startCallsScript, keys, args));
      indexes.forEach((callIndex, k) => {
        replies[callIndex] = got[k];
      });
    };
    // One script per namespace (a Redis Cluster slot); a job's calls normally share one.
    await Promise.all([...indexesByOrigin(calls)].map(startInNamespace));
    return replies;
  }

  /** Reports for one job: outcomes given in the same tick are recorded and sent together. */
  forJob(queued: QueuedJob, jobId: string): ReportFn {
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
            this.flush(target, jobId, reports).catch((e: unknown) => {
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

  private async flush(target: ReplyTarget, jobId: string, reports: readonly Report[]): Promise<void> {
    const home = reports.filter((r) => r.origin === target.home);
    const apart = home.length === reports.length ? [] : reports.filter((r) => r.origin !== target.home);
    await Promise.all([
      home.length > 0 ? this.recordAndSend(target.replyTo, jobId, home) : undefined,
      apart.length > 0 ? this.recordThenSend(target.replyTo, jobId, apart) : undefined,
    ]);
    for (const r of reports) r.resolve();
  }

  /** Outcome keys beside the stream: one script records the fresh outcomes and sends what it recorded. */
  private async recordAndSend(replyTo: string, jobId: string, reports: readonly Report[]): Promise<void> {
    const fresh = reports.filter((r) => !r.recorded);
    const keys = [replyTo];
    for (const r of fresh) keys.push(this.keys.outcome(r.origin, r.callId));
    const streamTtlMs = this.isExpireDue(replyTo) ? RESULTS_STREAM_TTL_MS : 0;
    const args: (string | number)[] = [RUNNING_MARK + jobId, OUTCOME_TTL_MS, RESULTS_STREAM_MAXLEN, streamTtlMs];
    for (const r of fresh) args.push(r.callId, r.json);
    for (const r of reports) if (r.recorded) args.push(r.callId, r.json);
    parseReportOutcomesReply(await runScript(this.redis, reportOutcomesScript, keys, args));
  }

  /**
   * Outcome keys in another namespace (a coordinator took the round over): recorded there first,
   * then the ones recorded now, and those recorded before, sent.
   */
  private async recordThenSend(replyTo: string, jobId: string, reports: readonly Report[]): Promise<void> {
    const fresh = reports.filter((r) => !r.recorded);
    const recordedNow = new Set<Report>();
    const recordInNamespace = async ([origin, indexes]: [string, number[]]) => {
      const group = indexes.map((i) => fresh[i] as Report);
      const keys = group.map((r) => this.keys.outcome(origin, r.callId));
      const args = [RUNNING_MARK + jobId, OUTCOME_TTL_MS, ...group.map((r) => r.json)];
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
    const fields = reports.flatMap((r) => ['job', r.callId, 'outcome', r.json]);
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

  /**
   * A job BullMQ failed without our processor's outcomes: it stalled past its limit (its worker
   * died), or the processor could not report. Each of its calls without an outcome gets one;
   * serial calls are never re-run (DESIGN.md).
   */
  async reportFailure(bullJob: Job, error: Error, queue: QueueClass): Promise<void> {
    const queued = parseQueuedJob(bullJob.data);
    if (!queued || bullJob.id === undefined) return;
    const lost = error.message === STALLED_REASON;
    const report = this.forJob(queued, bullJob.id);
    const durationMs = bullJob.processedOn ? Math.max(0, Date.now() - bullJob.processedOn) : 0;
    await Promise.all(
      queued.calls.map((call) => {
        const message = !lost
          ? `the worker could not finish the job: ${error.message}`
          : queue === 'serial'
            ? `the worker running ${call.name} died; the outcome is unknown and the call was not re-run`
            : `the worker running ${call.name} died, and again after one retry; the outcome is unknown`;
        const ref = { callId: jobIdFor(call.round, call.callIndex), origin: call.origin ?? queued.coordinator };
        return report(ref, failedOutcome(lost ? 'worker_died' : 'handler_threw', message, durationMs));
      }),
    );
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
