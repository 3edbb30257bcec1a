import { EVENT_REPLAY_MS, type Executor, type Handler } from '@tool-dispatch/shared';
import { createBuiltinRegistry, type McpHub, runJob, type Sandbox, type WorkerMetrics } from '@tool-dispatch/worker';
import { MemoryConfirmHub } from '../confirm/memory.js';
import { Engine, type EngineOptions } from '../engine.js';
import { MemoryEventBus } from '../events/memory.js';
import { LocalExecutor } from '../executors/local.js';
import { MemoryInboxFeed } from '../inbox/memory.js';
import { MemoryInputHub } from '../inputs/memory.js';
import { MemoryLimits } from '../limits/memory.js';
import { MemoryStore } from '../store/memory.js';

export type CreateEngineOptions = Omit<
  EngineOptions,
  'executor' | 'store' | 'events' | 'confirmations' | 'inputs' | 'limits'
> &
  Partial<Pick<EngineOptions, 'store' | 'events' | 'confirmations' | 'inputs' | 'limits'>> & {
    /** Defaults to embedded execution: the built-in handlers (plus `handlers`) in this process. */
    executor?: Executor;
    handlers?: ReadonlyArray<{ name: string; handler: Handler }>;
    /** MCP servers whose tools run in this process (TD_MCP_CONFIG); their tools join the catalog. */
    mcp?: McpHub;
    /** Counts the calls run in this process as a worker counts its own (dev's /metrics shows them). */
    workerMetrics?: WorkerMetrics;
    /** What run_command runs in (API.md v1.3); absent: this process's own, from TD_SANDBOX*. */
    sandbox?: Sandbox;
  };

/** Builds an engine; what is not given runs embedded: in-memory store, events, confirmations and parked calls, handlers in this process. */
export async function createEngine(options: CreateEngineOptions): Promise<Engine> {
  const {
    executor,
    store,
    events,
    confirmations,
    inputs,
    limits,
    handlers,
    mcp: _mcp,
    workerMetrics: _wm,
    sandbox: _sandbox,
    ...rest
  } = options;
  const exec = executor ?? embeddedExecutor(options);
  const { sessionTtlMs, roundRetentionMs } = options.config;
  return new Engine({
    ...rest,
    executor: exec,
    // (v1.3) A running round's calls, as far as this process's executor got with them.
    ...(rest.callProgress || !(exec instanceof LocalExecutor) ? {} : { callProgress: exec }),
    store: store ?? new MemoryStore({ sessionTtlMs, roundRetentionMs }),
    events: events ?? new MemoryEventBus(Date.now, Math.min(EVENT_REPLAY_MS, options.config.sessionTtlMs)),
    confirmations: confirmations ?? new MemoryConfirmHub(),
    inputs: inputs ?? new MemoryInputHub(),
    limits: limits ?? new MemoryLimits(),
    inboxFeed: rest.inboxFeed ?? new MemoryInboxFeed(),
  });
}

/** The built-in handlers (plus `handlers`) run in this process with a worker's deadline rules. */
function embeddedExecutor(options: CreateEngineOptions): Executor {
  const registry = createBuiltinRegistry(options.sandbox ? { sandbox: options.sandbox } : {});
  for (const h of options.handlers ?? []) registry.register(h.name, h.handler);
  const mcp = options.mcp;
  if (mcp) registry.addSource(mcp);
  const config = { httpAllow: options.config.httpAllow, searchUrl: options.config.searchUrl };
  const metrics = options.workerMetrics;
  metrics?.knownTools(registry.names());
  if (options.sandbox) metrics?.sandboxMode(options.sandbox.mode);
  return new LocalExecutor({
    run: (job, signal, ranOn, exec) => {
      const run = () =>
        runJob(registry, job, signal, config, ranOn, exec?.requestInput ? { requestInput: exec.requestInput } : {});
      return metrics ? metrics.track(job.queue, job.name, run) : run();
    },
    names: () => registry.names(),
    ...(mcp ? { tools: () => mcp.tools() } : {}),
  });
}
