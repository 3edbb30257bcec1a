import type { DispatchConfig, HandlerConfig, ToolDefinition } from '@tool-dispatch/shared';
import { coalesceWrites } from '@tool-dispatch/shared/redis';
import { initTracing, type Tracing } from '@tool-dispatch/shared/tracing';
import {
  createBuiltinRegistry,
  type RunningWorker,
  startMetricsServer,
  startWorker,
  WorkerMetrics,
} from '@tool-dispatch/worker';
import { Redis } from 'ioredis';
import { RedisConfirmHub } from '../confirm/redis.js';
import { Engine, type EngineHooks } from '../engine.js';
import { RedisEventBus } from '../events/redis.js';
import { QueueExecutor } from '../executors/queue/queue-executor.js';
import { mountQueueDashboard } from '../http/dashboard.js';
import { RedisInputHub } from '../inputs/redis.js';
import { RedisLedger } from '../ledger/redis.js';
import { RedisStore } from '../store/redis.js';
import type { CoordinatorMetrics } from './metrics.js';
import { type RunningCoordinator, startCoordinator } from './serve.js';

const handlerConfigOf = (config: DispatchConfig): HandlerConfig => ({
  httpAllow: config.httpAllow,
  searchUrl: config.searchUrl,
});

/** Logs an infrastructure error once per distinct message in a row (reconnect loops repeat them). */
function onceInARow(log: (line: string) => void, label: string): (e: Error) => void {
  let last = '';
  return (e) => {
    if (e.message === last) return;
    last = e.message;
    log(`${label}: ${e.message}`);
  };
}

function requireRedis(config: DispatchConfig): string {
  if (!config.redisUrl) throw new Error('distributed mode needs REDIS_URL (e.g. redis://127.0.0.1:6379)');
  return config.redisUrl;
}

/** The engine over Redis: RedisStore, RedisEventBus, RedisConfirmHub, RedisInputHub and the BullMQ QueueExecutor. */
export async function createDistributedEngine(
  config: DispatchConfig,
  options: {
    hooks?: EngineHooks;
    log?: (line: string) => void;
    /** User tools' definitions; their handlers are registered on the workers. */
    tools?: readonly ToolDefinition[];
  } = {},
): Promise<{ engine: Engine; executor: QueueExecutor; release(): Promise<void> }> {
  const redisUrl = requireRedis(config);
  const log = options.log ?? (() => {});
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3, lazyConnect: false });
  // The store's, events' and leases' commands of one burst of rounds go out in one socket write.
  coalesceWrites(redis);
  let lastError = '';
  redis.on('error', (e: Error) => {
    if (e.message !== lastError) log(`redis: ${e.message}`);
    lastError = e.message;
  });
  const prefix = config.prefix;
  const executor = new QueueExecutor({ redisUrl, prefix, onError: onceInARow(log, 'queue') });
  await executor.waitUntilReady();
  const engine = new Engine({
    config,
    executor,
    store: new RedisStore({ redis, prefix, events: {} }),
    events: new RedisEventBus({ redis, prefix }),
    confirmations: new RedisConfirmHub({ redis, prefix }),
    inputs: new RedisInputHub({ redis, prefix }),
    workersAlive: () => executor.workersAlive(),
    ledger: new RedisLedger(redis, prefix),
    coordinatorId: executor.coordinatorId,
    onError: (e) => log(`recovery: ${e.message}`),
    onRecover: (ref, from) =>
      log(
        `${from.coordinator === executor.coordinatorId ? 'resuming round' : 'taking over round'} ${ref.round} (session ${ref.session}, run ${ref.run})${from.coordinator === executor.coordinatorId ? ', which failed part way' : ` from coordinator ${from.coordinator}`}${from.decided ? ', with its pass-1 decisions kept (confirmations answered, or calls parked)' : ''}`,
      ),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.hooks ? { hooks: options.hooks } : {}),
  });
  await engine.startRecovery();
  return {
    engine,
    executor,
    release: async () => {
      if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    },
  };
}

/** Queue depth and worker liveness, read from Redis at each scrape of /metrics; workers' tools start at 0. */
function watchQueues(metrics: CoordinatorMetrics, executor: QueueExecutor): void {
  metrics.onScrape(async function knowWorkersTools() {
    metrics.knownTools(await executor.handlerNames());
  });
  metrics.onScrape(async function readQueueGauges() {
    for (const [name, queue] of Object.entries(executor.queues)) {
      metrics.setQueueJobCounts(
        name,
        await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized'),
      );
    }
    metrics.setWorkersAlive(await executor.workersAlive());
  });
}

/** `coordinator` (workers = 0) or `dev` with REDIS_URL (workers in this process). */
export async function distributedCoordinator(options: {
  config: DispatchConfig;
  port: number;
  host: string;
  log: (line: string) => void;
  workers: number;
  tracing: Tracing;
  metrics: CoordinatorMetrics;
  hooks: EngineHooks;
}): Promise<RunningCoordinator> {
  const { config, log, metrics } = options;
  const workers: RunningWorker[] = [];
  let release: (() => Promise<void>) | undefined;
  let executor: QueueExecutor | undefined;
  const running = await startCoordinator({
    config,
    port: options.port,
    host: options.host,
    log,
    makeEngine: async () => {
      const built = await createDistributedEngine(config, { hooks: options.hooks, log });
      release = built.release;
      executor = built.executor;
      watchQueues(metrics, built.executor);
      return built.engine;
    },
    metricsText: async () => metrics.metrics(),
    extraRoutes: (app) =>
      mountQueueDashboard(app, {
        queues: () => executor?.queues ?? {},
        prefix: config.prefix,
        apiToken: config.apiToken,
      }),
    tracing: options.tracing,
    onClosed: async () => {
      await Promise.all(workers.map((w) => w.close()));
      await release?.();
      await options.tracing.shutdown();
    },
  });
  for (let i = 0; i < options.workers; i++) {
    workers.push(
      await startWorker({
        redisUrl: requireRedis(config),
        prefix: config.prefix,
        registry: createBuiltinRegistry(),
        config: handlerConfigOf(config),
        concurrency: config.workerConcurrency,
        serialConcurrency: config.workerSerialConcurrency,
        onError: onceInARow(log, 'worker'),
      }),
    );
  }
  log(
    `distributed mode: queues on ${redactUrl(requireRedis(config))} (prefix ${config.prefix}), ${options.workers} in-process workers`,
  );
  return running;
}

/** `tool-dispatch worker`: consumes both queues, serves /metrics, /healthz and /readyz on `port` (0 = off). */
export async function runWorkerProcess(options: {
  config: DispatchConfig;
  port: number;
  log: (line: string) => void;
}): Promise<{ stop(): Promise<void> }> {
  const { config, log } = options;
  const redisUrl = requireRedis(config);
  const tracing = initTracing('tool-dispatch-worker');
  const metrics = new WorkerMetrics();
  const worker = await startWorker({
    redisUrl,
    prefix: config.prefix,
    registry: createBuiltinRegistry(),
    config: handlerConfigOf(config),
    concurrency: config.workerConcurrency,
    serialConcurrency: config.workerSerialConcurrency,
    metrics,
    onError: onceInARow(log, 'worker'),
  });
  // /readyz: this process can reach the queues' Redis (a connection of its own, never blocked).
  const probe = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
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
    `worker ${worker.id} consuming ${config.prefix} queues on ${redactUrl(redisUrl)} (concurrency ${config.workerConcurrency}, serial ${config.workerSerialConcurrency})${server ? `; metrics on :${server.port}` : ''}`,
  );
  return {
    stop: async () => {
      await worker.close();
      await server?.close();
      probe.disconnect();
      await tracing.shutdown();
    },
  };
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'REDIS_URL';
  }
}
