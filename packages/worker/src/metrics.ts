import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { QueueClass } from '@tool-dispatch/shared';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { McpHub } from './mcp/hub.js';
import { registerMcpMetrics } from './mcp/metrics.js';

/** Distinct tool label values kept; executions of further names are counted under `_other`. */
export const MAX_TOOL_LABELS = 500;
export const OTHER_TOOL_LABEL = '_other';
/** How an execution ends, as td_worker_executions_total's `status`. */
const EXECUTION_STATUSES = ['ok', 'error'] as const;

/** prom-client's default metrics that `promtool check metrics` rejects (gauges named *_total). */
const LINT_FAILING_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

export interface WorkerMetricsOptions {
  /** Also expose process_* and nodejs_* metrics (default true; those promtool rejects are left out). */
  defaultMetrics?: boolean;
}

/**
 * A worker's Prometheus metrics (API.md "Operations"), in a registry of its own so several
 * workers in one process (`dev`, tests) never clash.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  readonly contentType: string = this.registry.contentType;
  private readonly seenTools = new Set<string>();

  private readonly executions = new Counter({
    name: 'td_worker_executions_total',
    help: 'Executions this worker finished, by tool and outcome (ok, or error).',
    labelNames: ['tool', 'status'] as const,
    registers: [this.registry],
  });
  private readonly inflight = new Gauge({
    name: 'td_worker_inflight',
    help: 'Executions running on this worker, by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  private readonly sandbox = new Gauge({
    name: 'td_worker_sandbox',
    help: 'What this worker runs commands in (API.md v1.3): 1 for its mode (on, off, or unavailable: no sandbox could be made), 0 for the others.',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  /** Sets td_worker_sandbox: 1 for `mode`, 0 for the other two. */
  sandboxMode(mode: 'on' | 'off' | 'unavailable'): void {
    for (const m of ['on', 'off', 'unavailable'] as const) this.sandbox.labels(m).set(m === mode ? 1 : 0);
  }

  /** Adds the MCP metrics of this process's servers (td_mcp_servers_up, td_mcp_calls_total). */
  watchMcp(hub: McpHub): void {
    registerMcpMetrics(this.registry, hub);
  }

  constructor(options: WorkerMetricsOptions = {}) {
    if (options.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry });
      for (const name of LINT_FAILING_DEFAULTS) this.registry.removeSingleMetric(name);
    }
    // Both queues show from the first scrape, at 0.
    for (const queue of ['concurrent', 'serial'] satisfies QueueClass[]) this.inflight.labels(queue).set(0);
  }

  /** Starts each tool's execution counts (ok, error) at 0: startWorker passes its registry's names. */
  knownTools(names: Iterable<string>): void {
    for (const name of names) {
      const tool = this.toolLabel(name);
      for (const status of EXECUTION_STATUSES) this.executions.labels(tool, status).inc(0);
    }
  }

  /**
   * Marks an execution as started on `queue` and returns the function that ends it, which
   * records td_worker_executions_total{tool,status}; calling that function again does nothing.
   */
  executionStarted(queue: QueueClass | string, tool: string): (status: string) => void {
    this.inflight.labels(queue).inc();
    let ended = false;
    return (status: string) => {
      if (ended) return;
      ended = true;
      this.inflight.labels(queue).dec();
      this.executions.labels(this.toolLabel(tool), status).inc();
    };
  }

  /** Wraps one execution: in flight while `fn` runs, counted with the status `fn` returns (`error` if it throws). */
  async track<T extends { status: string }>(
    queue: QueueClass | string,
    tool: string,
    fn: () => Promise<T>,
  ): Promise<T> {
    const end = this.executionStarted(queue, tool);
    try {
      const outcome = await fn();
      end(outcome.status);
      return outcome;
    } catch (e) {
      end('error');
      throw e;
    }
  }

  /** The exposition for GET /metrics (content type `contentType`). */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  private toolLabel(tool: string): string {
    if (this.seenTools.has(tool)) return tool;
    if (this.seenTools.size >= MAX_TOOL_LABELS) return OTHER_TOOL_LABEL;
    this.seenTools.add(tool);
    return tool;
  }
}

export interface MetricsServerOptions {
  metrics: WorkerMetrics;
  /** API.md: PORT, default 9464 (the caller turns the server off for 0). */
  port: number;
  host?: string;
  /** For /readyz: e.g. connected to Redis; /readyz answers 503 while false. Defaults to ready. */
  isReady?: () => Promise<boolean> | boolean;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A worker's HTTP port: GET /metrics, /healthz (process up) and /readyz. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { metrics, isReady } = options;
  const server: Server = createServer(function workerOperations(req, res) {
    const path = req.url?.split('?')[0];
    const reply = (status: number, type: string, body: string) =>
      res.writeHead(status, { 'content-type': type }).end(body);
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'text/plain', 'method not allowed\n');
    if (path === '/healthz') return reply(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz') {
      Promise.resolve(isReady ? isReady() : true)
        .catch(() => false)
        .then((ready) =>
          ready
            ? reply(200, 'application/json', '{"status":"ready"}')
            : reply(503, 'application/json', '{"error":{"code":"not_ready","message":"not ready"}}'),
        );
      return;
    }
    if (path === '/metrics') {
      metrics.metrics().then(
        (text) => reply(200, metrics.contentType, text),
        (e: unknown) => reply(500, 'text/plain', `metrics failed: ${String(e)}\n`),
      );
      return;
    }
    reply(404, 'text/plain', 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
