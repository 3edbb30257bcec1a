// API.md "Operations": the coordinator's and a worker's /metrics after a known workload, in
// distributed mode with real processes: every count as expected, and each exposition clean
// under `promtool check metrics`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanMetrics } from '../support/promtool.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';
import { parseExposition, type Sample, samplesOf, sampleValue, tableOf, typesOf } from './exposition.js';
import { request } from './processes.js';
import { putSession, runTool, type Stack, startStack, submitRound } from './stack.js';

const SETUP_TIMEOUT_MS = 90_000;

let redis: TestRedis;
let stack: Stack;
/** Scrapes taken while the confirmation was pending. */
let pending: { coordinator: Sample[] };
/** Scrapes taken before the first call: what a dashboard shows right after a start. */
let fresh: { coordinator: Sample[]; worker: Sample[] };
let statuses: string[][];

async function scrape(url: string): Promise<{ text: string; samples: Sample[]; contentType: string }> {
  const r = await request(`${url}/metrics`);
  if (r.status !== 200) throw new Error(`GET ${url}/metrics: ${r.status} ${r.text}`);
  return { text: r.text, samples: parseExposition(r.text), contentType: r.headers.get('content-type') ?? '' };
}

/** Reads until `done` holds; the failure names `what` and shows the last value read. */
async function readUntil<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let last: T | undefined;
  const held = await until(
    async () => {
      last = await read();
      return done(last) ? { value: last } : undefined;
    },
    { what: () => `${what} (last: ${JSON.stringify(last)})` },
  );
  return held.value;
}

/**
 * The workload: one call of each status but `error`'s siblings timeout/worker_lost/cancelled.
 * Round A (run m1): find_tools ok, calculate ok, the same deduped, calculate called directly
 * (refused), a calculate that fails (error), a tool that exists nowhere (unknown), calculate
 * without args (invalid), read_files never fetched (schema), fetch_page ok.
 * Round B (run m2): the same fetch_page (cached), the first calculate again (ok: another run).
 * Round C (run m3): edit_file, which waits for a confirmation, then is denied.
 */
async function runWorkload(): Promise<void> {
  const session = 's-metrics';
  await putSession(stack, session);
  const a = await submitRound(stack, { session, run: 'm1' }, [
    { id: 'a1', name: 'find_tools', args: { names: ['calculate', 'fetch_page', 'edit_file'] } },
    runTool('a2', 'calculate', { expression: '2 + 2' }),
    runTool('a3', 'calculate', { expression: '2 + 2' }),
    { id: 'a4', name: 'calculate', args: { expression: '3 + 3' } },
    runTool('a5', 'calculate', { expression: '2 +' }),
    runTool('a6', 'no_such_tool', {}),
    runTool('a7', 'calculate', {}),
    runTool('a8', 'read_files', { paths: ['a.txt'] }),
    runTool('a9', 'fetch_page', { url: stack.pageUrl }),
  ]);
  const b = await submitRound(stack, { session, run: 'm2' }, [
    runTool('b1', 'fetch_page', { url: stack.pageUrl }),
    runTool('b2', 'calculate', { expression: '2 + 2' }),
  ]);
  const c = submitRound(stack, { session, run: 'm3' }, [runTool('c1', 'edit_file', { path: 'a.txt', content: 'x' })]);
  const confirmations = await readUntil(
    'a pending confirmation',
    async (): Promise<{ confirmationId: string }[]> =>
      (await request(`${stack.coordinator.url}/v1/sessions/${session}/confirmations`)).json.confirmations,
    (list) => list.length === 1,
  );
  pending = { coordinator: (await scrape(stack.coordinator.url)).samples };
  const id = confirmations[0]?.confirmationId;
  const answer = await request(`${stack.coordinator.url}/v1/sessions/${session}/confirmations/${id}`, {
    body: { approve: false },
  });
  if (answer.status !== 200) throw new Error(`deny: ${answer.status} ${answer.text}`);
  statuses = [a, b, await c].map((r) => r.results.map((x) => x.status));
}

/** A table without its zero entries: the series every known tool starts with (checked on their own below). */
const counted = (table: Record<string, number>) => Object.fromEntries(Object.entries(table).filter(([, n]) => n !== 0));

beforeAll(async () => {
  redis = await startRedis();
  stack = await startStack(redis);
  fresh = {
    coordinator: (await scrape(stack.coordinator.url)).samples,
    worker: (await scrape(stack.workers[0]?.metricsUrl ?? '')).samples,
  };
  await runWorkload();
}, SETUP_TIMEOUT_MS);
afterAll(async () => {
  await stack?.close();
  await redis?.stop();
});

it('answers the workload with the statuses the counts below assume', () => {
  expect(statuses).toEqual([
    ['ok', 'ok', 'deduped', 'refused', 'error', 'unknown', 'invalid', 'schema', 'ok'],
    ['cached', 'ok'],
    ['denied'],
  ]);
});

describe('the coordinator’s /metrics', () => {
  let text: string;
  let samples: Sample[];
  let contentType: string;
  beforeAll(async () => {
    // Queue counts are read from Redis at scrape time; the worker marks a job completed just
    // after it sends the outcomes, so wait for both jobs to show: round A's three executions
    // were admitted together and share one job, round B's one has its own.
    ({ text, samples, contentType } = await readUntil(
      'two completed jobs on the concurrent queue',
      () => scrape(stack.coordinator.url),
      (s) => sampleValue(s.samples, 'td_queue_jobs', { queue: 'concurrent', state: 'completed' }) === 2,
    ));
  });

  it('passes promtool check metrics', async () => {
    await expectCleanMetrics(text);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('declares each metric family with its type', () => {
    expect(Object.fromEntries([...typesOf(text)].filter(([name]) => name.startsWith('td_')))).toEqual({
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
      td_limit_rejections_total: 'counter',
      td_limit_wait_seconds: 'histogram',
      td_limit_waits_total: 'counter',
      td_limit_waiting: 'gauge',
      td_queue_jobs: 'gauge',
      td_workers_alive: 'gauge',
      td_find_tools_searches_total: 'counter',
      td_find_tools_search_hits_total: 'counter',
      td_mcp_sessions_open: 'gauge',
      td_mcp_requests_total: 'counter',
    });
  });

  it('counts every call by tool and status, a tool that exists nowhere under _unknown', () => {
    expect(counted(tableOf(samples, 'td_calls_total', ['tool', 'status']))).toEqual({
      'find_tools/ok': 1,
      'calculate/ok': 2,
      'calculate/deduped': 1,
      'calculate/refused': 1,
      'calculate/error': 1,
      '_unknown/unknown': 1,
      'calculate/invalid': 1,
      'read_files/schema': 1,
      'fetch_page/ok': 1,
      'fetch_page/cached': 1,
      'edit_file/denied': 1,
    });
  });

  it('observes the duration of the calls that ran (ok and error), per tool', () => {
    expect(counted(tableOf(samples, 'td_call_duration_seconds_count', ['tool']))).toEqual({
      find_tools: 1,
      calculate: 3,
      fetch_page: 1,
    });
    for (const tool of ['find_tools', 'calculate', 'fetch_page']) {
      const buckets = samplesOf(samples, 'td_call_duration_seconds_bucket', { tool });
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      expect(inf?.value, `${tool} +Inf bucket`).toBe(sampleValue(samples, 'td_call_duration_seconds_count', { tool }));
      const values = buckets.map((b) => b.value);
      expect(values, `${tool} buckets are cumulative`).toEqual([...values].sort((x, y) => x - y));
      expect(sampleValue(samples, 'td_call_duration_seconds_sum', { tool })).toBeGreaterThanOrEqual(0);
    }
  });

  it('counts dedupe and cache hits', () => {
    expect(sampleValue(samples, 'td_dedupe_hits_total')).toBe(1);
    expect(sampleValue(samples, 'td_cache_hits_total')).toBe(1);
  });

  it('counts refusals by reason (refused, unknown, invalid, denied), not schema answers', () => {
    expect(counted(tableOf(samples, 'td_refusals_total', ['reason']))).toEqual({
      refused: 1,
      unknown: 1,
      invalid: 1,
      denied: 1,
    });
  });

  it('showed the waiting round and its confirmation while it waited, and neither once answered', () => {
    expect(sampleValue(pending.coordinator, 'td_rounds_in_progress')).toBe(1);
    expect(sampleValue(pending.coordinator, 'td_confirmations_pending')).toBe(1);
    expect(sampleValue(samples, 'td_rounds_in_progress')).toBe(0);
    expect(sampleValue(samples, 'td_confirmations_pending')).toBe(0);
  });

  it('reports the jobs of each queue by state, and the live workers', () => {
    const jobs = tableOf(samples, 'td_queue_jobs', ['queue', 'state']);
    expect(jobs).toMatchObject({
      'concurrent/completed': 2,
      'concurrent/waiting': 0,
      'concurrent/active': 0,
      'concurrent/failed': 0,
      'serial/completed': 0,
      'serial/waiting': 0,
      'serial/active': 0,
    });
    expect(Object.keys(jobs).every((k) => /^(concurrent|serial)\//.test(k))).toBe(true);
    expect(sampleValue(samples, 'td_workers_alive')).toBe(1);
  });
});

describe('right after a start, before any call', () => {
  const statusesOf = ['ok', 'error', 'deduped', 'cached', 'schema', 'refused', 'invalid', 'denied'];

  it('the coordinator shows every built-in tool at 0 for each status, and each refusal reason at 0', () => {
    const calls = tableOf(fresh.coordinator, 'td_calls_total', ['tool', 'status']);
    for (const tool of ['find_tools', 'calculate', 'read_files', 'run_command', 'edit_file', 'ask_user'])
      for (const status of statusesOf) expect(calls[`${tool}/${status}`], `${tool}/${status}`).toBe(0);
    expect(calls['_unknown/unknown']).toBe(0);
    expect(Object.values(calls).every((n) => n === 0)).toBe(true);
    expect(tableOf(fresh.coordinator, 'td_call_duration_seconds_count', ['tool'])).toMatchObject({ calculate: 0 });
    expect(tableOf(fresh.coordinator, 'td_refusals_total', ['reason'])).toEqual({
      refused: 0,
      unknown: 0,
      invalid: 0,
      denied: 0,
    });
  });

  it('the worker shows every handler it registered at 0, ok and error', () => {
    const executions = tableOf(fresh.worker, 'td_worker_executions_total', ['tool', 'status']);
    for (const tool of ['calculate', 'read_files', 'run_command', 'fetch_page'])
      for (const status of ['ok', 'error']) expect(executions[`${tool}/${status}`], `${tool}/${status}`).toBe(0);
    expect(Object.values(executions).every((n) => n === 0)).toBe(true);
  });
});

describe('the worker’s /metrics', () => {
  let text: string;
  let samples: Sample[];
  beforeAll(async () => {
    const worker = stack.workers[0];
    if (!worker) throw new Error('no worker');
    ({ text, samples } = await scrape(worker.metricsUrl));
  });

  it('passes promtool check metrics', async () => {
    await expectCleanMetrics(text);
  });

  it('counts the executions it finished by tool and outcome', () => {
    expect(counted(tableOf(samples, 'td_worker_executions_total', ['tool', 'status']))).toEqual({
      'calculate/ok': 2,
      'calculate/error': 1,
      'fetch_page/ok': 1,
    });
  });

  it('has nothing in flight on either queue once the workload is done', () => {
    expect(tableOf(samples, 'td_worker_inflight', ['queue'])).toEqual({ concurrent: 0, serial: 0 });
  });

  it('answers /healthz', async () => {
    const r = await request(`${stack.workers[0]?.metricsUrl}/healthz`);
    expect(r.status).toBe(200);
  });
});
