// DESIGN.md "Observability", end to end in a real Jaeger (issue 32): Jaeger v2 built with Go
// (`go tool jaeger`, test/jaeger/tools) on free loopback ports with its in-memory store; a
// coordinator and two worker processes on a Redis of the test export OTLP/HTTP to it; one round
// with a concurrent batch, a serial call, a confirmation approved through the API and an MCP
// call (server-everything's echo); then Jaeger's own query API is asked for the trace. Run by
// `pnpm test:jaeger` (not part of `pnpm test`: it needs Go). TD_JAEGER_SCREENSHOT=1 also
// rewrites docs/img/jaeger-round.png.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mcpToolName } from '@tool-dispatch/shared';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../observability/processes.js';
import { runTool, type Stack, startStack, submitRound } from '../observability/stack.js';
import { isLoopback, launchChromium, recordTraffic } from '../support/browser.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { type Jaeger, type JaegerSpan, type JaegerTrace, parentOf, startJaeger, tag } from './jaeger.js';
import { renderTrace } from './trace-page.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCREENSHOT = path.join(ROOT, 'docs/img/jaeger-round.png');
const SETUP_TIMEOUT_MS = 300_000;
const ROUND_ROUTE = 'POST /v1/sessions/:session/runs/:run/rounds';
const COORDINATOR = 'tool-dispatch-coordinator';
const WORKER = 'tool-dispatch-worker';
const ECHO = mcpToolName('everything', 'echo');
/** The calls that run on a worker, by id (find_tools is answered in pass 1, on the coordinator). */
const EXECUTED = { a: 'calculate', b: 'calculate', m: ECHO, x: 'run_command', e: 'edit_file' } as const;

const everythingBin = () => {
  const dir = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything');
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(dir, Object.values(json.bin)[0] as string);
};

let redis: TestRedis;
let jaeger: Jaeger;
let stack: Stack;
let tmp: string;
let session: string;
let round: { round: string; results: { id: string; status: string }[] };
let trace: JaegerTrace;

/** Waits until the catalog lists the MCP echo (the workers connect to server-everything after start-up). */
async function echoListed(): Promise<void> {
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 250))) {
    const tools = (await request(`${stack.coordinator.url}/v1/tools`)).json.tools as { name: string }[];
    if (tools.some((t) => t.name === ECHO)) return;
    if (Date.now() > deadline) throw new Error(`the catalog never listed ${ECHO}`);
  }
}

/** Approves the round's one confirmation (edit_file) through the API once it is asked. */
async function approveWhenAsked(): Promise<void> {
  const base = `${stack.coordinator.url}/v1/sessions/${session}/confirmations`;
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const pending = (await request(base)).json.confirmations as { confirmationId: string; name: string }[];
    if (pending.length > 0) {
      expect(pending.map((p) => p.name)).toEqual(['edit_file']);
      const answer = await request(`${base}/${pending[0]?.confirmationId}`, { body: { approve: true } });
      if (answer.status !== 200) throw new Error(`approve: ${answer.status} ${answer.text}`);
      return;
    }
    if (Date.now() > deadline) throw new Error('no confirmation was asked');
  }
}

async function runRound(): Promise<void> {
  session = `s-jaeger-${Date.now().toString(36)}`;
  const put = await request(`${stack.coordinator.url}/v1/sessions/${session}`, {
    method: 'PUT',
    body: { provider: 'openai', autoApprove: ['run_command'] },
  });
  if (put.status !== 200) throw new Error(`PUT session: ${put.status} ${put.text}`);
  await echoListed();
  const answered = submitRound(stack, { session, run: 'r1' }, [
    { id: 'f', name: 'find_tools', args: { names: ['calculate', ECHO, 'run_command', 'edit_file'] } },
    runTool('a', 'calculate', { expression: '6 * 7' }),
    runTool('b', 'calculate', { expression: '2 + 3' }),
    runTool('m', ECHO, { message: 'traced in Jaeger' }),
    runTool('x', 'run_command', { command: 'echo serial' }),
    runTool('e', 'edit_file', { path: 'notes.txt', content: 'approved through the API\n' }),
  ]);
  await approveWhenAsked();
  round = await answered;
}

/** Polls Jaeger until the round's trace holds every execute (find_tools' on the coordinator too) and the commit (spans arrive in batches). */
async function traceFromJaeger(): Promise<JaegerTrace> {
  const tags = encodeURIComponent(JSON.stringify({ 'td.round': round.round }));
  let last = 'nothing';
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 500))) {
    const found = await jaeger.api<JaegerTrace[]>(`/api/traces?service=${COORDINATOR}&tags=${tags}&lookback=1h`);
    const spans = found.flatMap((t) => t.spans.map((s) => s.operationName));
    last = `${found.length} traces: ${spans.join(', ')}`;
    const executes = spans.filter((n) => n.startsWith('execute ')).length;
    if (found.length === 1 && executes === 6 && spans.includes('commit')) {
      return (await jaeger.api<JaegerTrace[]>(`/api/traces/${found[0]?.traceID}`))[0] as JaegerTrace;
    }
    if (Date.now() > deadline) throw new Error(`the round's trace never completed in Jaeger (last: ${last})`);
  }
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'td-jaeger-'));
  const mcpConfig = path.join(tmp, 'mcp.json');
  writeFileSync(
    mcpConfig,
    JSON.stringify({ mcpServers: { everything: { command: 'node', args: [everythingBin()] } } }),
  );
  redis = await startRedis();
  jaeger = await startJaeger();
  stack = await startStack(redis, {
    workers: 2,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      TD_MCP_CONFIG: mcpConfig,
    },
  });
  await runRound();
  trace = await traceFromJaeger();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await stack?.close();
  await jaeger?.stop();
  await redis?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const serviceOf = (span: JaegerSpan) => trace.processes[span.processID]?.serviceName;
const pidOf = (span: JaegerSpan) => trace.processes[span.processID]?.tags.find((t) => t.key === 'process.pid')?.value;
const named = (name: string) => trace.spans.filter((s) => s.operationName === name);
function one(name: string, attrs: Record<string, unknown> = {}): JaegerSpan {
  const found = named(name).filter((s) => Object.entries(attrs).every(([k, v]) => tag(s, k) === v));
  expect(found, `one ${name} ${JSON.stringify(attrs)} among ${trace.spans.map((s) => s.operationName)}`).toHaveLength(
    1,
  );
  return found[0] as JaegerSpan;
}
/** A span's logs (OTel events) named `name`, each as its fields. */
const eventsOf = (span: JaegerSpan, name: string) =>
  span.logs
    .map((l) => Object.fromEntries(l.fields.map((f) => [f.key, f.value])))
    .filter((fields) => fields.event === name);

describe('a round traced into a real Jaeger', () => {
  it('answers every call of the round ok, the confirmed edit_file and the MCP echo included', () => {
    expect(
      round.results.map((r) => [r.id, r.status]),
      JSON.stringify(round.results),
    ).toEqual(['f', 'a', 'b', 'm', 'x', 'e'].map((id) => [id, 'ok']));
  });

  it('finds one trace for the round by service and td.round, the same from the worker’s service', async () => {
    const services = await jaeger.api<string[]>('/api/services');
    expect(services).toEqual(expect.arrayContaining([COORDINATOR, WORKER]));
    const tags = encodeURIComponent(JSON.stringify({ 'td.round': round.round }));
    const fromWorker = await jaeger.api<JaegerTrace[]>(`/api/traces?service=${WORKER}&tags=${tags}&lookback=1h`);
    expect(fromWorker.map((t) => t.traceID)).toEqual([trace.traceID]);
    expect(new Set(trace.spans.map((s) => s.traceID))).toEqual(new Set([trace.traceID]));
  });

  it('has the span tree DESIGN.md describes: request → round → preflight, waits, execute per call, commit', () => {
    const request = one(ROUND_ROUTE);
    const roundSpan = one('round');
    expect(parentOf(request)).toBeUndefined();
    expect(tag(request, 'span.kind')).toBe('server');
    expect(tag(request, 'http.response.status_code')).toBe(200);
    expect(parentOf(roundSpan)).toBe(request.spanID);
    for (const name of ['preflight', 'confirm wait', 'commit'])
      expect(parentOf(one(name)), name).toBe(roundSpan.spanID);
    expect(parentOf(one('find_tools'))).toBe(one('preflight').spanID);
    for (const [id, tool] of Object.entries(EXECUTED)) {
      const execute = one(`execute ${tool}`, { 'td.call.id': id });
      expect(parentOf(execute), `execute ${id}`).toBe(roundSpan.spanID);
      expect(tag(execute, 'span.kind')).toBe('consumer');
      const wait = one('queue wait', { 'td.call.id': id });
      expect(parentOf(wait), `queue wait ${id}`).toBe(roundSpan.spanID);
      expect(wait.startTime + wait.duration).toBeLessThanOrEqual(execute.startTime + 1);
    }
    // find_tools, answered by the coordinator in pass 1, has its execute span too, under the round.
    const found = one('execute find_tools', { 'td.call.id': 'f' });
    expect(parentOf(found)).toBe(roundSpan.spanID);
    expect(tag(found, 'td.status')).toBe('ok');
    // The calls after the serial run_command waited for it (the serial barrier).
    expect(named('admission wait').some((s) => tag(s, 'td.wait.reason') === 'serial_barrier')).toBe(true);
    const names = new Set(trace.spans.map((s) => s.operationName));
    expect([...names].sort()).toEqual(
      [ROUND_ROUTE, 'round', 'preflight', 'find_tools', 'confirm wait', 'admission wait', 'queue wait', 'commit']
        .concat(['find_tools', 'calculate', ECHO, 'run_command', 'edit_file'].map((t) => `execute ${t}`))
        .sort(),
    );
  });

  it('shows spans of both services: the coordinator’s and the workers’ (from the worker processes)', () => {
    for (const name of [ROUND_ROUTE, 'round', 'preflight', 'confirm wait', 'commit']) {
      expect(serviceOf(one(name)), name).toBe(COORDINATOR);
    }
    expect(pidOf(one('round'))).toBe(stack.coordinator.child.pid);
    const workerPids = stack.workers.map((w) => w.child.pid);
    expect(serviceOf(one('execute find_tools')), 'execute find_tools').toBe(COORDINATOR);
    const onWorkers = trace.spans.filter(
      (s) => s.operationName.startsWith('execute ') && s.operationName !== 'execute find_tools',
    );
    expect(onWorkers).toHaveLength(Object.keys(EXECUTED).length);
    for (const span of onWorkers) {
      expect(serviceOf(span), span.operationName).toBe(WORKER);
      expect(workerPids).toContain(pidOf(span));
    }
  });

  it('carries td.session, td.run, td.round, td.call.id, gen_ai.tool.name and td.status', () => {
    const ids = { 'td.session': session, 'td.run': 'r1', 'td.round': round.round };
    for (const name of ['round', 'preflight', 'commit']) {
      for (const [key, value] of Object.entries(ids)) expect(tag(one(name), key), `${name} ${key}`).toBe(value);
    }
    expect(tag(one('round'), 'td.calls')).toBe(6);
    for (const [id, tool] of Object.entries(EXECUTED)) {
      const execute = one(`execute ${tool}`, { 'td.call.id': id });
      for (const [key, value] of Object.entries(ids)) expect(tag(execute, key), `${id} ${key}`).toBe(value);
      expect(tag(execute, 'gen_ai.tool.name'), id).toBe(tool);
      expect(tag(execute, 'td.status'), id).toBe('ok');
    }
    expect(tag(one(`execute ${ECHO}`), 'mcp.server')).toBe('everything');
    const calls = eventsOf(one('round'), 'td.call');
    expect(calls.map((c) => [c['td.call.id'], c['gen_ai.tool.name'], c['td.status']])).toEqual([
      ['f', 'find_tools', 'ok'],
      ...Object.entries(EXECUTED).map(([id, tool]) => [id, tool, 'ok']),
    ]);
    expect(eventsOf(one('confirm wait'), 'td.call')).toEqual([
      expect.objectContaining({
        'td.call.id': 'e',
        'gen_ai.tool.name': 'edit_file',
        'td.confirm.decision': 'approved',
      }),
    ]);
  });
});

describe('the trace drawn from Jaeger’s answer, in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('loads Jaeger’s own page for the trace with no request leaving loopback', async () => {
    // Built from the Go module, Jaeger serves a placeholder there (no UI assets); whatever it
    // serves must not reach past this machine.
    const context = await browser.newContext();
    const traffic = await recordTraffic(context);
    const page = await context.newPage();
    const answer = await page.goto(`${jaeger.queryUrl}/trace/${trace.traceID}`, { waitUntil: 'load' });
    expect(answer?.status()).toBe(200);
    expect(traffic.requests.length).toBeGreaterThan(0);
    expect(traffic.requests.filter((u) => !isLoopback(u))).toEqual([]);
    await context.close();
  });

  it('draws every span with its service and parent, no request leaving loopback; TD_JAEGER_SCREENSHOT=1 keeps it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, deviceScaleFactor: 1 });
    const traffic = await recordTraffic(context);
    const page = await context.newPage();
    await page.setContent(renderTrace(trace, { source: jaeger.queryUrl }), { waitUntil: 'load' });
    const rows = await page.locator('[data-span]').evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    expect(rows).toHaveLength(trace.spans.length);
    for (const span of trace.spans) expect(rows.join('\n')).toContain(span.operationName);
    const file = process.env.TD_JAEGER_SCREENSHOT === '1' ? SCREENSHOT : path.join(tmp, 'jaeger-round.png');
    await page.locator('main').screenshot({ path: file });
    expect(traffic.requests.filter((u) => !isLoopback(u))).toEqual([]);
    await context.close();
  });
});
