import type { DispatchConfig } from '@tool-dispatch/shared';
import type { Tracing } from '@tool-dispatch/shared/tracing';
import type { FastifyInstance } from 'fastify';
import type { Engine } from '../engine.js';
import { LISTEN_BACKLOG } from '../http/limits.js';
import { buildServer } from '../http/server.js';
import { createEngine } from './embedded.js';

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
  const engine = await (options.makeEngine ?? ((config) => createEngine({ config })))(options.config);
  const app = await buildServer({
    dispatcher: engine,
    apiToken: options.config.apiToken,
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
      await engine.drain();
      // Subscribers get the drained rounds' last events before their streams end.
      await engine.events.flush?.(2000).catch(() => undefined);
      await closeWithin(app, 5000);
      await engine.close();
      await options.onClosed?.();
    })();
    return stopping;
  };
  return { url, port, engine, app, stop };
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

/** How long shutdown may take after the rounds drained before the process exits anyway. */
const SHUTDOWN_LIMIT_MS = 20_000;

/** SIGTERM/SIGINT: drain in-flight rounds, then exit 0 (API.md Processes). */
export function exitOnSignals(stop: () => Promise<void>, log: (line: string) => void): void {
  let received = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, function drainAndExit() {
      if (received) return;
      received = true;
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
}
