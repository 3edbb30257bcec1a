// long-file: the distributed composition: every Redis seam, the queue executor, the dashboard and the in-process workers wired in one place; split, the wiring of one process would be read across files.
import {
  ConfigError,
  type DispatchConfig,
  EVENT_REPLAY_MS,
  type HandlerConfig,
  type ToolDefinition,
} from '@tool-dispatch/shared';
import {
  checkDeployment,
  coalesceWrites,
  connectRedis,
  type RedisClient,
  type RedisConnectionOptions,
  type RedisTarget,
  ReplicaAcks,
  redisConnectionOptions,
  redisKeys,
  redisTargetOf,
  startWhenRedisAnswers,
} from '@tool-dispatch/shared/redis';
import { initTracing, type Tracing } from '@tool-dispatch/shared/tracing';
import {
  createBuiltinRegistry,
  type McpHub,
  type RunningWorker,
  type Sandbox,
  type StartWorkerOptions,
  startMetricsServer,
  startWorker,
  WorkerMetrics,
} from '@tool-dispatch/worker';
import { RedisConfirmHub } from '../confirm/redis.js';
import { Engine, type EngineHooks } from '../engine.js';
import { RedisEventBus } from '../events/redis.js';
import { QueueCallProgress } from '../executors/queue/call-progress.js';
import { QueueExecutor } from '../executors/queue/queue-executor.js';
import { mountQueueDashboard } from '../http/dashboard.js';
import type { McpHooks } from '../http/mcp/mcp-service.js';
import type { McpSessions } from '../http/mcp/mcp-sessions.js';
import type { McpTaskRecords } from '../http/mcp/mcp-tasks-records.js';
import { RedisInboxFeed } from '../inbox/redis.js';
import { RedisInputHub } from '../inputs/redis.js';
import { RedisLedger } from '../ledger/redis.js';
import { RedisRunCancels } from '../ledger/redis-run-cancels.js';
import { RedisLimits } from '../limits/redis.js';
import type { RoundRef } from '../model.js';
import type { NamedLimits } from '../rules/named-limits.js';
import { RedisStore } from '../store/redis.js';
import { RedisMcpSessions } from './mcp-sessions.js';
import { RedisMcpTaskRecords } from './mcp-task-records.js';
import type { CoordinatorMetrics } from './metrics.js';
import { describeTarget, onceInARow, quitRedis, redactUrl } from './redis-log.js';
import { type RunningCoordinator, startCoordinator } from './serve.js';

const handlerConfigOf = (config: DispatchConfig): HandlerConfig => ({
  httpAllow: config.httpAllow,
  searchUrl: config.searchUrl,
});

/** What the QueueExecutor takes from the config: its prefix and how long its bookkeeping stays in Redis. */
const queueOptionsOf = (config: DispatchConfig) => ({
  prefix: config.prefix,
  finishedJobRetentionMs: config.finishedJobRetentionMs,
  outcomeAfterCommitTtlMs: config.outcomeAfterCommitTtlMs,
  resendLostJobs: config.redisReplicaAcks > 0,
});

/**
 * REDIS_URL naming a node of a Redis Cluster cannot work (every key of another slot answers
 * MOVED): a ConfigError (exit 2) saying to use REDIS_CLUSTER_NODES. Checked when INFO answers
 * within a second; a Redis not up yet is left to the reconnects.
 */
async function refuseClusterNodeAsOne(redis: RedisClient, target: RedisTarget): Promise<void> {
  if (!('url' in target)) return;
  const info = await Promise.race([
    redis.info('cluster').catch(() => ''),
    new Promise<string>((resolve) => setTimeout(() => resolve(''), 1_000).unref()),
  ]);
  if (/^cluster_enabled:1/m.test(info)) {
    redis.disconnect();
    throw new ConfigError(
      `REDIS_URL ${redactUrl(target.url)} is a node of a Redis Cluster; set REDIS_CLUSTER_NODES to its nodes (host:port,...) instead`,
    );
  }
}

/** The URL and the options (TLS trusting TD_REDIS_TLS_CA) every Redis connection of this process is made with. */
function redisTarget(config: DispatchConfig): { target: RedisTarget; connection: RedisConnectionOptions } {
  const target = redisTargetOf(config);
  // TLS for a rediss:// URL, or a cluster whose seeds are rediss:// URLs (TD_REDIS_TLS_CA for either).
  const tlsOf =
    'url' in target ? target.url : target.clusterNodes.some((n) => /^rediss:\/\//i.test(n)) ? 'rediss://' : 'redis://';
  const connection = redisConnectionOptions(tlsOf, { tlsCaFile: config.redisTlsCaFile });
  // Every connection made from these (the store's, the queues', BullMQ's, the workers') has the
  // command deadline; duplicates for blocking reads and subscribers drop it (duplicateClient).
  return { target, connection: { ...connection, commandTimeoutMs: config.redisCommandTimeoutMs } };
}

/** The BullMQ executor, ready, its TD_QUEUE_SHARDS compared with the deployment's record and recorded (a mismatch logged). */
async function startQueueExecutor(
  config: DispatchConfig,
  redis: RedisClient,
  log: (line: string) => void,
): Promise<QueueExecutor> {
  const { target, connection } = redisTarget(config);
  const executor = new QueueExecutor({
    ...queueOptionsOf(config),
    target,
    connection,
    queueShards: config.queueShards,
    jobName: config.jobName,
    jobCalls: config.jobCalls,
    onShardMismatch: log,
    onError: onceInARow(log, 'queue'),
  });
  try {
    await executor.waitUntilReady();
    const mismatch = await checkDeployment(redis, redisKeys(config.prefix), {
      queueShards: config.queueShards,
      id: executor.coordinatorId,
      writer: true,
    });
    if (mismatch) log(mismatch);
    return executor;
  } catch (e) {
    await executor.close().catch(() => undefined);
    throw e;
  }
}

/** The operator's line for a round resumed here or taken over from another coordinator. */
function recoveredLine(ref: RoundRef, from: { coordinator: string; decided: boolean }, me: string): string {
  const own = from.coordinator === me;
  return `${own ? 'resuming round' : 'taking over round'} ${ref.round} (session ${ref.session}, run ${ref.run})${own ? ', which failed part way' : ` from coordinator ${from.coordinator}`}${from.decided ? ', with its pass-1 decisions kept (confirmations answered, or calls parked)' : ''}`;
}

/** The engine's Redis connection: writes coalesced, each new error logged once. */
async function connectEngineRedis(config: DispatchConfig, log: (line: string) => void): Promise<RedisClient> {
  const { target, connection } = redisTarget(config);
  const redis = connectRedis(target, { ...connection, maxRetriesPerRequest: 3, lazyConnect: false });
  await refuseClusterNodeAsOne(redis, target).catch((e: unknown) => {
    redis.disconnect();
    throw e;
  });
  // The store's, events' and leases' commands of one burst of rounds go out in one socket write.
  coalesceWrites(redis);
  redis.on('error', onceInARow(log, 'redis'));
  return redis;
}

/** What createDistributedEngine builds: the engine and the Redis seams /mcp uses beside it. */
export interface DistributedEngine {
  engine: Engine;
  executor: QueueExecutor;
  mcpSessions: McpSessions;
  mcpTaskRecords: McpTaskRecords;
  release(): Promise<void>;
}

/** The engine over Redis: RedisStore, RedisEventBus, RedisConfirmHub, RedisInputHub and the BullMQ QueueExecutor. */
export async function createDistributedEngine(
  config: DispatchConfig,
  options: {
    hooks?: EngineHooks;
    log?: (line: string) => void;
    /** User tools' definitions; their handlers are registered on the workers. */
    tools?: readonly ToolDefinition[];
    /** TD_LIMITS (held in Redis, across every coordinator). */
    namedLimits?: NamedLimits;
  } = {},
): Promise<DistributedEngine> {
  const log = options.log ?? (() => {});
  const redis = await connectEngineRedis(config, log);
  const prefix = config.prefix;
  const replayMs = Math.min(EVENT_REPLAY_MS, config.sessionTtlMs); // a session's events: no longer than the session
  const executor = await startQueueExecutor(config, redis, log).catch((e: unknown) => {
    // A start Redis refused leaves no connection open (it is tried again: startWhenRedisAnswers).
    redis.disconnect();
    throw e;
  });
  const engine = new Engine({
    config,
    executor,
    store: new RedisStore({
      redis,
      prefix,
      sessionTtlMs: config.sessionTtlMs,
      roundRetentionMs: config.roundRetentionMs,
      events: { replayMs },
      queueNames: executor.allQueues().map((q) => q.name),
      durability: new ReplicaAcks(redis, config.redisReplicaAcks, config.redisWaitMs),
    }),
    events: new RedisEventBus({ redis, prefix, replayMs }),
    confirmations: new RedisConfirmHub({ redis, prefix }),
    inputs: new RedisInputHub({ redis, prefix }),
    inboxFeed: new RedisInboxFeed({ redis, prefix }),
    limits: new RedisLimits({ redis, prefix, owner: executor.coordinatorId, onError: onceInARow(log, 'limits') }),
    workersAlive: () => executor.workersAlive(),
    callProgress: new QueueCallProgress(redis, redisKeys(prefix)),
    ledger: new RedisLedger(redis, prefix),
    runCancels: new RedisRunCancels(redis, prefix, executor.coordinatorId),
    coordinatorId: executor.coordinatorId,
    onError: (e) => log(`recovery: ${e.message}`),
    log,
    onRecover: (ref, from) => log(recoveredLine(ref, from, executor.coordinatorId)),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.namedLimits ? { namedLimits: options.namedLimits } : {}),
    ...(options.hooks ? { hooks: options.hooks } : {}),
  });
  await engine.startRecovery();
  return {
    engine,
    executor,
    mcpSessions: new RedisMcpSessions(redis, prefix),
    mcpTaskRecords: new RedisMcpTaskRecords(redis, prefix),
    release: () => quitRedis(redis),
  };
}

/** Queue depth and worker liveness, read from Redis at each scrape of /metrics; workers' tools start at 0. */
function watchQueues(metrics: CoordinatorMetrics, executor: QueueExecutor): void {
  metrics.onScrape(async function knowWorkersTools() {
    metrics.knownTools(await executor.handlerNames());
  });
  metrics.onScrape(async function readQueueGauges() {
    const sharded = executor.queueShards > 1;
    for (const [name, shards] of Object.entries(executor.queues)) {
      for (const [shard, queue] of shards.entries()) {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized');
        metrics.setQueueJobCounts(name, counts, sharded ? shard : undefined);
      }
    }
    metrics.setWorkersAlive(await executor.workersAlive());
  });
}

/** `coordinator` (workers = 0) or `dev` with REDIS_URL (workers in this process). */
// long: composition only; its options type is written inline and takes a third of it
export async function distributedCoordinator(options: {
  config: DispatchConfig;
  port: number;
  host: string;
  log: (line: string) => void;
  workers: number;
  tracing: Tracing;
  metrics: CoordinatorMetrics;
  hooks: EngineHooks;
  /** The MCP servers the in-process workers share (TD_MCP_CONFIG). */
  mcp?: McpHub;
  /** What the in-process workers' run_command runs in (API.md v1.3); absent: the process's own. */
  sandbox?: Sandbox;
  mcpHooks?: McpHooks;
  version?: string;
  namedLimits?: NamedLimits;
}): Promise<RunningCoordinator> {
  const { config, log, metrics } = options;
  const workers: RunningWorker[] = [];
  // dev's in-process workers count their executions where the coordinator's /metrics shows them.
  const workerMetrics = options.workers > 0 ? new WorkerMetrics({ defaultMetrics: false }) : undefined;
  if (options.sandbox) workerMetrics?.sandboxMode(options.sandbox.mode);
  let release: (() => Promise<void>) | undefined;
  let executor: QueueExecutor | undefined;
  let mcpSessions: McpSessions | undefined;
  let mcpTaskRecords: McpTaskRecords | undefined;
  const running = await startCoordinator({
    config,
    port: options.port,
    host: options.host,
    log,
    makeEngine: async () => {
      const limits = options.namedLimits ? { namedLimits: options.namedLimits } : {};
      // A Redis still coming up beside the coordinator, or too loaded to answer in time, is waited for.
      const built = await startWhenRedisAnswers(
        () => createDistributedEngine(config, { hooks: options.hooks, log, ...limits }),
        { what: 'coordinator', log },
      );
      release = built.release;
      executor = built.executor;
      mcpSessions = built.mcpSessions;
      mcpTaskRecords = built.mcpTaskRecords;
      watchQueues(metrics, built.executor);
      return built.engine;
    },
    mcpSessions: () => mcpSessions as McpSessions,
    mcpTaskRecords: () => mcpTaskRecords as McpTaskRecords,
    ...(options.mcpHooks ? { mcpHooks: options.mcpHooks } : {}),
    ...(options.version ? { version: options.version } : {}),
    metricsText: async () => `${await metrics.metrics()}${(await workerMetrics?.metrics()) ?? ''}`,
    extraRoutes: (app) =>
      mountQueueDashboard(app, {
        queues: () => executor?.queues ?? {},
        prefix: config.prefix,
        apiToken: config.apiToken,
      }),
    tracing: options.tracing,
    onClosed: async () => {
      await Promise.all(workers.map((w) => w.close()));
      await options.mcp?.close();
      await release?.();
      await options.tracing.shutdown();
    },
  });
  workers.push(
    ...(await startInProcessWorkers(
      config,
      options.workers,
      { mcp: options.mcp, metrics: workerMetrics, sandbox: options.sandbox },
      log,
    )),
  );
  log(
    `distributed mode: queues on ${describeTarget(redisTargetOf(config))} (prefix ${config.prefix}${config.queueShards > 1 ? `, ${config.queueShards} shards` : ''}), ${options.workers} in-process workers`,
  );
  return running;
}

/** A worker's options from the process's configuration (`dev`'s in-process workers and `worker`). */
function workerOptionsOf(
  config: DispatchConfig,
  parts: {
    mcp: McpHub | undefined;
    metrics?: WorkerMetrics;
    log: (line: string) => void;
    withLog?: boolean;
    sandbox?: Sandbox | undefined;
  },
): StartWorkerOptions {
  const { mcp, metrics, log } = parts;
  const { target, connection } = redisTarget(config);
  return {
    redisUrl: config.redisUrl ?? '',
    target,
    connection,
    prefix: config.prefix,
    registry: registryWith(mcp, parts.sandbox),
    ...(mcp ? { mcp } : {}),
    config: handlerConfigOf(config),
    concurrency: config.workerConcurrency,
    serialConcurrency: config.workerSerialConcurrency,
    queueShards: config.queueShards,
    durability: { acks: config.redisReplicaAcks, waitMs: config.redisWaitMs },
    ...(metrics ? { metrics } : {}),
    // `worker` prints the worker's own lines; `dev`'s workers leave them to the coordinator's.
    ...(parts.withLog ? { log } : {}),
    onError: onceInARow(log, 'worker'),
  };
}

/** `dev`'s workers in this process, sharing one MCP hub (its servers connect once per process). */
async function startInProcessWorkers(
  config: DispatchConfig,
  count: number,
  shared: { mcp: McpHub | undefined; metrics: WorkerMetrics | undefined; sandbox?: Sandbox | undefined },
  log: (line: string) => void,
): Promise<RunningWorker[]> {
  const { mcp, metrics, sandbox } = shared;
  if (count === 0) return [];
  const workers: RunningWorker[] = [];
  for (let i = 0; i < count; i++) {
    const workerOptions = workerOptionsOf(config, { mcp, ...(metrics ? { metrics } : {}), log, sandbox });
    workers.push(await startWhenRedisAnswers(() => startWorker(workerOptions), { what: 'worker', log }));
  }
  return workers;
}

/** `tool-dispatch worker`: consumes both queues, serves /metrics, /healthz and /readyz on `port` (0 = off). */
export async function runWorkerProcess(options: {
  config: DispatchConfig;
  port: number;
  log: (line: string) => void;
  /** The process's MCP servers (TD_MCP_CONFIG). */
  mcp?: McpHub | undefined;
  /** What its run_command runs in (API.md v1.3); absent: the process's own, from TD_SANDBOX*. */
  sandbox?: Sandbox | undefined;
}): Promise<{ stop(): Promise<void> }> {
  const { config, log } = options;
  const { target, connection } = redisTarget(config);
  const tracing = initTracing('tool-dispatch-worker');
  const metrics = new WorkerMetrics();
  const mcp = options.mcp;
  if (mcp) metrics.watchMcp(mcp);
  if (options.sandbox) metrics.sandboxMode(options.sandbox.mode);
  const workerOptions = workerOptionsOf(config, { mcp, metrics, log, withLog: true, sandbox: options.sandbox });
  // A Redis still coming up beside the worker, or too loaded to answer in time, is waited for.
  const worker = await startWhenRedisAnswers(
    async () => {
      const check = connectRedis(target, { ...connection, maxRetriesPerRequest: 1 });
      check.on('error', () => {});
      await refuseClusterNodeAsOne(check, target).finally(() => check.disconnect());
      return startWorker(workerOptions);
    },
    { what: 'worker', log },
  );
  // /readyz: this process can reach the queues' Redis (a connection of its own, never blocked).
  const probe = connectRedis(target, { ...connection, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  probe.on('error', () => {});
  const server =
    options.port > 0
      ? await startMetricsServer({
          metrics,
          port: options.port,
          host: '0.0.0.0',
          isReady: () => probe.status === 'ready',
        })
      : undefined;
  log(
    `worker ${worker.id} consuming ${config.prefix} queues on ${describeTarget(target)} (concurrency ${config.workerConcurrency}, serial ${config.workerSerialConcurrency}${config.queueShards > 1 ? `, ${config.queueShards} shards` : ''})${server ? `; metrics on :${server.port}` : ''}`,
  );
  return {
    stop: async () => {
      await worker.close();
      await mcp?.close();
      await options.sandbox?.close();
      await server?.close();
      probe.disconnect();
      await tracing.shutdown();
    },
  };
}

/** The built-in handlers, and the MCP servers' tools when there are servers. */
function registryWith(mcp: McpHub | undefined, sandbox: Sandbox | undefined) {
  const registry = createBuiltinRegistry(sandbox ? { sandbox } : {});
  if (mcp) registry.addSource(mcp);
  return registry;
}
