import { describe, expect, it } from 'vitest';
import { CoordinatorMetrics, OTHER_TOOL_LABEL, ToolLabels, UNKNOWN_TOOL_LABEL } from './metrics.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Reads the text exposition format's samples (enough for what prom-client writes). */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return parseExposition(text).samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

describe('CoordinatorMetrics', () => {
  it('exposes every metric API.md names, with its type, before any traffic', async () => {
    const { types } = parseExposition(await new CoordinatorMetrics().metrics());
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('td_')))).toEqual({
      td_calls_total: 'counter',
      td_call_duration_seconds: 'histogram',
      td_rounds_in_progress: 'gauge',
      td_rounds_waiting: 'gauge',
      td_dedupe_hits_total: 'counter',
      td_cache_hits_total: 'counter',
      td_refusals_total: 'counter',
      td_confirmations_pending: 'gauge',
      td_grants_total: 'counter',
      td_inputs_pending: 'gauge',
      td_queue_jobs: 'gauge',
      td_workers_alive: 'gauge',
      td_find_tools_searches_total: 'counter',
      td_find_tools_search_hits_total: 'counter',
      td_mcp_sessions_open: 'gauge',
      td_mcp_requests_total: 'counter',
      td_limit_waits_total: 'counter',
      td_limit_rejections_total: 'counter',
      td_limit_wait_seconds: 'histogram',
      // Beyond API.md's list (operations.md): the calls waiting for a limit now.
      td_limit_waiting: 'gauge',
    });
  });

  it('counts TD_LIMITS waits and rejections by limit, and how long the waits lasted', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.limitWaited('tool:http_request', 0.2);
    m.limitWaited('tool:http_request', 0.4);
    m.limitRejected('tenant:acme');
    const text = await m.metrics();
    expect(value(text, 'td_limit_waits_total', { limit: 'tool:http_request' })).toBe(2);
    expect(value(text, 'td_limit_waits_total', { limit: 'tenant:acme' })).toBe(1);
    expect(value(text, 'td_limit_rejections_total', { limit: 'tenant:acme' })).toBe(1);
    expect(value(text, 'td_limit_wait_seconds_count')).toBe(2);
  });

  it('counts find_tools searches, and the later calls of a run of a tool one of its searches returned', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    const run1 = { session: 's', run: 'r1' };
    const found = {
      name: 'find_tools',
      status: 'ok' as const,
      output: { tools: [{ name: 'calculate' }, { name: 'read_files' }] },
    };
    m.recordSearch({ name: 'calculate', status: 'ok', output: {} }, {}, run1); // before any search: no hit
    m.recordSearch(found, { query: 'math' }, run1);
    m.recordSearch(found, { names: ['calculate'] }, run1); // by names: not a search
    m.recordSearch({ name: 'calculate', status: 'ok', output: {} }, {}, run1);
    m.recordSearch({ name: 'read_files', status: 'error', output: undefined }, {}, run1);
    m.recordSearch({ name: 'edit_file', status: 'ok', output: {} }, {}, run1); // not returned
    m.recordSearch({ name: 'calculate', status: 'ok', output: {} }, {}, { session: 's', run: 'r2' }); // another run
    const text = await m.metrics();
    expect(value(text, 'td_find_tools_searches_total')).toBe(1);
    expect(value(text, 'td_find_tools_search_hits_total')).toBe(2);
  });

  it('counts MCP requests by method, unknown methods under one label, and MCP sessions open', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.mcpRequest('tools/call');
    m.mcpRequest('tools/call');
    m.mcpRequest('made/up-by-a-client');
    m.mcpSessions(+1);
    m.mcpSessions(+1);
    m.mcpSessions(-1);
    const text = await m.metrics();
    expect(text).toMatch(/^td_mcp_requests_total\{method="tools\/call"\} 2$/m);
    expect(text).toMatch(/^td_mcp_requests_total\{method="other"\} 1$/m);
    expect(text).toMatch(/^td_mcp_requests_total\{method="initialize"\} 0$/m);
    expect(text).not.toMatch(/made\/up/);
    expect(text).toMatch(/^td_mcp_sessions_open 1$/m);
  });

  it('counts every call by tool and status, whatever its status', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.recordCall({ name: 'read_files', status: 'ok', durationMs: 12 });
    m.recordCall({ name: 'read_files', status: 'ok', durationMs: 30 });
    m.recordCall({ name: 'read_files', status: 'deduped', durationMs: 0 });
    m.recordCall({ name: 'fetch_page', status: 'cached', durationMs: 1 });
    m.recordCall({ name: 'edit_file', status: 'denied', durationMs: 0 });
    m.recordCall({ name: 'run_command', status: 'error', durationMs: 60_000 });
    const text = await m.metrics();
    expect(value(text, 'td_calls_total', { tool: 'read_files', status: 'ok' })).toBe(2);
    expect(value(text, 'td_calls_total', { tool: 'read_files', status: 'deduped' })).toBe(1);
    expect(value(text, 'td_calls_total', { tool: 'fetch_page', status: 'cached' })).toBe(1);
    expect(value(text, 'td_calls_total', { tool: 'edit_file', status: 'denied' })).toBe(1);
    expect(value(text, 'td_calls_total', { tool: 'run_command', status: 'error' })).toBe(1);
    expect(value(text, 'td_dedupe_hits_total')).toBe(1);
    expect(value(text, 'td_cache_hits_total')).toBe(1);
    expect(value(text, 'td_refusals_total', { reason: 'denied' })).toBe(1);
  });

  it('observes the duration, in seconds, only of calls that ran', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.recordCall({ name: 'read_files', status: 'ok', durationMs: 20 });
    m.recordCall({ name: 'read_files', status: 'error', durationMs: 3_000 });
    m.recordCall({ name: 'read_files', status: 'deduped', durationMs: 0 });
    const text = await m.metrics();
    expect(value(text, 'td_call_duration_seconds_count', { tool: 'read_files' })).toBe(2);
    expect(value(text, 'td_call_duration_seconds_sum', { tool: 'read_files' })).toBeCloseTo(3.02);
    expect(value(text, 'td_call_duration_seconds_bucket', { tool: 'read_files', le: '0.025' })).toBe(1);
    expect(value(text, 'td_call_duration_seconds_bucket', { tool: 'read_files', le: '+Inf' })).toBe(2);
  });

  it('counts refusals under the finer reason when one is given', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.recordCall({ name: 'write_x', status: 'refused', durationMs: 0 }, 'not_loaded');
    m.recordCall({ name: 'calculate', status: 'invalid', durationMs: 0 });
    m.recordRefusal('too_many_calls');
    const text = await m.metrics();
    expect(value(text, 'td_refusals_total', { reason: 'not_loaded' })).toBe(1);
    expect(value(text, 'td_refusals_total', { reason: 'invalid' })).toBe(1);
    expect(value(text, 'td_refusals_total', { reason: 'too_many_calls' })).toBe(1);
  });

  it('labels calls of tools that exist nowhere as one series, so model-invented names cannot explode it', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    for (const name of ['made_up_1', 'made_up_2']) m.recordCall({ name, status: 'unknown', durationMs: 0 });
    const text = await m.metrics();
    expect(value(text, 'td_calls_total', { tool: UNKNOWN_TOOL_LABEL, status: 'unknown' })).toBe(2);
    expect(text).not.toContain('made_up_1');
  });

  it('tracks rounds in progress and pending confirmations', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.roundStarted();
    m.roundStarted();
    m.roundEnded();
    m.confirmationRequested();
    m.confirmationRequested();
    m.confirmationSettled();
    let text = await m.metrics();
    expect(value(text, 'td_rounds_in_progress')).toBe(1);
    expect(value(text, 'td_confirmations_pending')).toBe(1);
    m.setRoundsInProgress(4);
    m.setConfirmationsPending(0);
    text = await m.metrics();
    expect(value(text, 'td_rounds_in_progress')).toBe(4);
    expect(value(text, 'td_confirmations_pending')).toBe(0);
    expect(value(text, 'td_rounds_waiting')).toBe(0);
    m.setRoundsWaiting(3);
    expect(value(await m.metrics(), 'td_rounds_waiting')).toBe(3);
    m.grantEvent('created');
    m.grantEvent('used');
    m.grantEvent('used');
    text = await m.metrics();
    expect(value(text, 'td_grants_total', { event: 'used' })).toBe(2);
    expect(value(text, 'td_grants_total', { event: 'created' })).toBe(1);
  });

  it('tracks the parked calls waited on', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    m.inputsWaiting(1);
    m.inputsWaiting(1);
    m.inputsWaiting(-1);
    expect(value(await m.metrics(), 'td_inputs_pending')).toBe(1);
  });

  it('refreshes queue depths and workers alive from scrape hooks, keeping old values when a hook fails', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false });
    let fail = false;
    let waiting = 3;
    m.onScrape(async () => {
      if (fail) throw new Error('redis down');
      m.setQueueJobCounts('td:concurrent', { waiting, active: 2 });
      m.setWorkersAlive(2);
    });
    let text = await m.metrics();
    expect(value(text, 'td_queue_jobs', { queue: 'td:concurrent', state: 'waiting' })).toBe(3);
    expect(value(text, 'td_queue_jobs', { queue: 'td:concurrent', state: 'active' })).toBe(2);
    expect(value(text, 'td_workers_alive')).toBe(2);
    fail = true;
    waiting = 9;
    text = await m.metrics();
    expect(value(text, 'td_queue_jobs', { queue: 'td:concurrent', state: 'waiting' })).toBe(3);
  });

  it('keeps two instances in one process apart', async () => {
    const a = new CoordinatorMetrics();
    const b = new CoordinatorMetrics();
    a.recordCall({ name: 'calculate', status: 'ok', durationMs: 1 });
    expect(value(await a.metrics(), 'td_calls_total', { tool: 'calculate', status: 'ok' })).toBe(1);
    expect(value(await b.metrics(), 'td_calls_total', { tool: 'calculate', status: 'ok' })).toBe(0);
  });

  it('starts every built-in tool’s series at 0 for each status, so a fresh dashboard shows 0, not "No data"', async () => {
    const text = await new CoordinatorMetrics({ defaultMetrics: false }).metrics();
    for (const status of ['ok', 'error', 'deduped', 'cached', 'schema', 'refused', 'invalid', 'denied']) {
      expect(value(text, 'td_calls_total', { tool: 'read_files', status }), status).toBe(0);
    }
    expect(value(text, 'td_calls_total', { tool: 'find_tools', status: 'ok' })).toBe(0);
    expect(value(text, 'td_calls_total', { tool: UNKNOWN_TOOL_LABEL, status: 'unknown' })).toBe(0);
    expect(value(text, 'td_call_duration_seconds_count', { tool: 'run_command' })).toBe(0);
    for (const reason of ['refused', 'unknown', 'invalid', 'denied']) {
      expect(value(text, 'td_refusals_total', { reason }), reason).toBe(0);
    }
  });

  it('starts the tools it is told of later (workers’ handlers) at 0 too, leaving counts alone', async () => {
    const m = new CoordinatorMetrics({ defaultMetrics: false, tools: [] });
    m.recordCall({ name: 'api_weather', status: 'ok', durationMs: 1 });
    m.knownTools(['api_weather', 'script_build']);
    m.knownTools(['api_weather']); // at every scrape, in distributed mode
    const text = await m.metrics();
    expect(value(text, 'td_calls_total', { tool: 'api_weather', status: 'ok' })).toBe(1);
    expect(value(text, 'td_call_duration_seconds_count', { tool: 'api_weather' })).toBe(1);
    expect(value(text, 'td_calls_total', { tool: 'script_build', status: 'error' })).toBe(0);
    expect(value(text, 'td_calls_total', { tool: 'read_files', status: 'ok' })).toBeUndefined();
  });

  it('includes process metrics by default, without the ones promtool rejects', async () => {
    const text = await new CoordinatorMetrics().metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).not.toContain('nodejs_active_handles_total');
  });
});

describe('ToolLabels', () => {
  it('keeps names up to its limit and folds the rest into one label', () => {
    const labels = new ToolLabels(2);
    expect([labels.label('a'), labels.label('b'), labels.label('c'), labels.label('a')]).toEqual([
      'a',
      'b',
      OTHER_TOOL_LABEL,
      'a',
    ]);
  });
});
