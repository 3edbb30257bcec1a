import type { DispatchConfig } from '@tool-dispatch/shared';
import type { Tracing } from '@tool-dispatch/shared/tracing';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../engine.js';
import { LISTEN_BACKLOG } from '../http/limits.js';
import type { McpHooks } from '../http/mcp/mcp-service.js';
import { McpService } from '../http/mcp/mcp-service.js';
import type { McpSessions } from '../http/mcp/mcp-sessions.js';
import { McpTasks } from '../http/mcp/mcp-tasks.js';
import type { McpTaskRecords } from '../http/mcp/mcp-tasks-records.js';
import { buildServer } from '../http/server.js';
import { loadTokenTable, type TokenTable } from '../http/tokens.js';
import { createEngine } from './embedded.js';
import { MemoryMcpSessions } from './mcp-sessions.js';
import { MemoryMcpTaskRecords } from './mcp-task-records.js';

export interface ServeOptions {
  config: DispatchConfig;
  port: number;
  host: string;
  /** Prints operator lines (the `listening on` line among them). */
  log?: (line: string) => void;
  /** Builds the engine; embedded (handlers in this process) by default. */
  makeEngine?: (config: DispatchConfig) => Promise<Engine>;
  metricsText?: () => Promise<string>;
  extraRoutes?: (app: FastifyInstance) => Promise<void>;
  /** Traces HTTP requests (the parent of each round's span) when enabled. */
  tracing?: Tracing;
  /** Called after the engine closed, to release what makeEngine started (workers, connections). */
  onClosed?: () => Promise<void>;
  /** Where /mcp keeps its MCP sessions (after makeEngine); in this process's memory by default. */
  mcpSessions?: () => McpSessions;
  /** (v1.3) Where /mcp keeps its MCP tasks (after makeEngine); in this process's memory by default. */
  mcpTaskRecords?: () => McpTaskRecords;
  /** Metrics and traces of /mcp. */
  mcpHooks?: McpHooks;
  /** The version the MCP server names itself with. */
  version?: string;
}

export interface RunningCoordinator {
  url: string;
  port: number;
  engine: Engine;
  app: FastifyInstance;
  /** Refuses new rounds, waits for in-flight ones, closes the HTTP server and the engine. */
  stop(): Promise<void>;
}

/** Starts a coordinator: the engine and its HTTP API, listening. */
export async function startCoordinator(options: ServeOptions): Promise<RunningCoordinator> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  // Checked before anything starts: a bad tokens file is exit 2 naming the problem.
  const apiTokens = options.config.apiTokensFile ? loadTokenTable(options.config.apiTokensFile) : undefined;
  const stopReloads = apiTokens ? reloadTokensOnHangup(apiTokens, options.config.apiTokensFile ?? '', log) : () => {};
  const engine = await (options.makeEngine ?? ((config) => createEngine({ config })))(options.config);
  const mcpSessions = options.mcpSessions?.() ?? new MemoryMcpSessions();
  const tasks = new McpTasks({
    dispatcher: engine,
    records: options.mcpTaskRecords?.() ?? new MemoryMcpTaskRecords(),
    retentionMs: options.config.roundRetentionMs,
    afterMs: options.config.mcpTaskAfterMs,
  });
  const mcp = new McpService({
    dispatcher: engine,
    sessions: mcpSessions,
    version: options.version ?? 'unknown',
    runIdleMs: options.config.mcpRunIdleMs,
    tasks,
    ...(options.mcpHooks ? { hooks: options.mcpHooks } : {}),
  });
  await mcp.start();
  const app = await buildServer({
    dispatcher: engine,
    mcp,
    apiToken: options.config.apiToken,
    apiTokens,
    ...(options.metricsText ? { metricsText: options.metricsText } : {}),
    ...(options.extraRoutes ? { extraRoutes: options.extraRoutes } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  await app.listen({ port: options.port, host: options.host, backlog: LISTEN_BACKLOG });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${shownHost}:${port}`;
  log(`listening on ${url}`);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopReloads();
      await engine.drain();
      // Subscribers get the drained rounds' last events before their streams end.
      await engine.events.flush?.(2000).catch(() => undefined);
      await closeWithin(app, 5000);
      await tasks.close();
      await mcpSessions.close();
      await engine.close();
      await options.onClosed?.();
    })();
    return stopping;
  };
  return { url, port, engine, app, stop };
}

/** SIGHUP re-reads TD_API_TOKENS; a bad file keeps the tokens in force and says why. Returns the unsubscribe. */
function reloadTokensOnHangup(table: TokenTable, file: string, log: (line: string) => void): () => void {
  const onHangup = () => {
    try {
      table.reload();
      log(`TD_API_TOKENS: reloaded ${file}`);
    } catch (e) {
      log(`${(e as Error).message}; the tokens read before stay in force`);
    }
  };
  process.on('SIGHUP', onHangup);
  return () => process.off('SIGHUP', onHangup);
}

/** fastify's close waits for open connections (event streams among them); give it a bound. */
async function closeWithin(app: FastifyInstance, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    app.close(),
    new Promise<void>((resolve) => {
      timer = setTimeout(function closeTimedOut() {
        app.server.closeAllConnections?.();
        resolve();
      }, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** How long shutdown may take after SIGTERM (the drain time) before the process exits anyway. */
const SHUTDOWN_LIMIT_MS = 20_000;

/** What a process that handles SIGTERM/SIGINT tells its handler once it is up. */
export interface SignalExit {
  /** The process is up: from now on a signal drains with `stop`, then exits 0. */
  ready(stop: () => Promise<void>): void;
}

/**
 * SIGTERM/SIGINT: drain in-flight rounds (or a worker's running calls), then exit 0 (API.md
 * Processes). Installed before the process starts anything, so no signal finds it without a
 * handler (the default would kill it with no drain and no exit 0): one that arrives before
 * `ready` exits 0 at once, as nothing is in flight yet. Whatever `stop` waits on, the process
 * exits SHUTDOWN_LIMIT_MS after the signal at the latest.
 */
export function exitOnSignals(log: (line: string) => void): SignalExit {
  let stop: (() => Promise<void>) | undefined;
  let received = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, function drainAndExit() {
      if (received) return;
      received = true;
      if (!stop) {
        log(`${signal}: stopping before ready; nothing in flight`);
        process.exit(0);
      }
      log(`${signal}: draining in-flight rounds`);
      // Closing connections to an unreachable Redis can wait forever; never let that keep us up.
      const limit = setTimeout(function shutdownTimedOut() {
        log(`shutdown: connections did not close within ${SHUTDOWN_LIMIT_MS} ms; exiting`);
        process.exit(0);
      }, SHUTDOWN_LIMIT_MS);
      limit.unref();
      stop().then(
        () => process.exit(0),
        (e: unknown) => {
          log(`shutdown failed: ${e instanceof Error ? e.message : String(e)}`);
          process.exit(1);
        },
      );
    });
  }
  return {
    ready: (s) => {
      stop = s;
    },
  };
}
