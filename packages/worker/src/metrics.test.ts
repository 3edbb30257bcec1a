import { afterEach, describe, expect, it } from 'vitest';
import { type MetricsServer, startMetricsServer, WorkerMetrics } from './metrics.js';

/** The value of one sample of the text exposition, matched by name and labels. */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('WorkerMetrics', () => {
  it('exposes td_worker_executions_total and td_worker_inflight with both queues at 0', async () => {
    const text = await new WorkerMetrics().metrics();
    expect(text).toContain('# TYPE td_worker_executions_total counter');
    expect(text).toContain('# TYPE td_worker_inflight gauge');
    expect(value(text, 'td_worker_inflight', { queue: 'concurrent' })).toBe(0);
    expect(value(text, 'td_worker_inflight', { queue: 'serial' })).toBe(0);
  });

  it('counts an execution in flight until it ends, then by tool and status, once', async () => {
    const m = new WorkerMetrics({ defaultMetrics: false });
    const end = m.executionStarted('serial', 'run_command');
    expect(value(await m.metrics(), 'td_worker_inflight', { queue: 'serial' })).toBe(1);
    end('ok');
    end('ok');
    const text = await m.metrics();
    expect(value(text, 'td_worker_inflight', { queue: 'serial' })).toBe(0);
    expect(value(text, 'td_worker_executions_total', { tool: 'run_command', status: 'ok' })).toBe(1);
  });

  it('tracks a wrapped execution with the status it returns, or error when it throws', async () => {
    const m = new WorkerMetrics({ defaultMetrics: false });
    await m.track('concurrent', 'fetch_page', async () => ({ status: 'error' as const }));
    await expect(
      m.track('concurrent', 'fetch_page', async () => {
        throw new Error('bug');
      }),
    ).rejects.toThrow('bug');
    await m.track('concurrent', 'calculate', async () => ({ status: 'ok' as const }));
    const text = await m.metrics();
    expect(value(text, 'td_worker_executions_total', { tool: 'fetch_page', status: 'error' })).toBe(2);
    expect(value(text, 'td_worker_executions_total', { tool: 'calculate', status: 'ok' })).toBe(1);
    expect(value(text, 'td_worker_inflight', { queue: 'concurrent' })).toBe(0);
  });

  it('starts the execution counts of the tools it is told of at 0, leaving counts alone', async () => {
    const m = new WorkerMetrics({ defaultMetrics: false });
    await m.track('concurrent', 'calculate', async () => ({ status: 'ok' as const }));
    m.knownTools(['calculate', 'read_files']);
    const text = await m.metrics();
    expect(value(text, 'td_worker_executions_total', { tool: 'calculate', status: 'ok' })).toBe(1);
    expect(value(text, 'td_worker_executions_total', { tool: 'calculate', status: 'error' })).toBe(0);
    expect(value(text, 'td_worker_executions_total', { tool: 'read_files', status: 'ok' })).toBe(0);
  });

  it('keeps two instances in one process apart', async () => {
    const a = new WorkerMetrics();
    const b = new WorkerMetrics();
    a.executionStarted('concurrent', 'calculate')('ok');
    expect(value(await b.metrics(), 'td_worker_executions_total', { tool: 'calculate' })).toBeUndefined();
  });
});

describe('startMetricsServer', () => {
  let server: MetricsServer | undefined;
  afterEach(() => server?.close());

  it('serves /metrics, /healthz and /readyz on its port', async () => {
    const metrics = new WorkerMetrics({ defaultMetrics: false });
    let ready = false;
    server = await startMetricsServer({ metrics, port: 0, host: '127.0.0.1', isReady: () => ready });
    const base = `http://127.0.0.1:${server.port}`;
    const res = await fetch(`${base}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('td_worker_inflight');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});
