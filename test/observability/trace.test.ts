// DESIGN.md "Observability": one trace per round, across the coordinator and worker processes.
// Real `bin/tool-dispatch coordinator` and `worker` processes export OTLP/HTTP to a receiver
// in this test; they are SIGTERMed before the spans are read, so the spans seen are the ones
// each process flushed on its way out.
import { QUEUE_NAMES } from '@tool-dispatch/shared/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { putSession, runTool, type Stack, startStack, submitRound } from './stack.js';

const ROUND_ROUTE = 'POST /v1/sessions/:session/runs/:run/rounds';
const TEST_TIMEOUT_MS = 90_000;

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

interface Workload {
  session: string;
  run: string;
  /** find_tools, run_tool(calculate), the same again (deduped in-round), calculate called directly (refused). */
  first: { round: string; results: { id: string; status: string }[] };
  /** A repeat of the first calculate (deduped from round 1) and a fetch_page that runs. */
  second: { round: string; results: { id: string; status: string }[] };
  /** The same fetch_page in another run (so it is not deduped): a cache hit. */
  third: { round: string; results: { id: string; status: string }[] };
  /** file_history and error_history (fetched in a round before), answered by the coordinator. */
  history: { round: string; results: { id: string; status: string }[] };
}

async function runWorkload(stack: Stack): Promise<Workload> {
  const session = `s-trace-${Date.now().toString(36)}`;
  const run = 'r1';
  await putSession(stack, session);
  const first = await submitRound(stack, { session, run }, [
    { id: 'c1', name: 'find_tools', args: { names: ['calculate', 'fetch_page'] } },
    runTool('c2', 'calculate', { expression: '6 * 7' }),
    runTool('c3', 'calculate', { expression: '6 * 7' }),
    { id: 'c4', name: 'calculate', args: { expression: '1 + 1' } },
  ]);
  const second = await submitRound(stack, { session, run }, [
    runTool('d1', 'calculate', { expression: '6 * 7' }),
    runTool('d2', 'fetch_page', { url: stack.pageUrl }),
  ]);
  const third = await submitRound(stack, { session, run: 'r2' }, [runTool('e1', 'fetch_page', { url: stack.pageUrl })]);
  await submitRound(stack, { session, run: 'r3' }, [
    { id: 'g1', name: 'find_tools', args: { names: ['file_history', 'error_history'] } },
  ]);
  const history = await submitRound(stack, { session, run: 'r3' }, [
    runTool('h1', 'file_history', { path: 'a.txt' }),
    runTool('h2', 'error_history', {}),
  ]);
  return { session, run, first, second, third, history };
}

const byId = (spans: readonly ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));

function only(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) {
    throw new Error(`expected one ${name} span, found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  }
  return found[0] as ReceivedSpan;
}

/** The spans of one round's trace, found through the round span's `td.round`. */
function traceOf(spans: readonly ReceivedSpan[], round: string): ReceivedSpan[] {
  const traceIds = new Set(spans.filter((s) => s.attributes['td.round'] === round).map((s) => s.traceId));
  expect(traceIds.size, `trace ids of round ${round}`).toBe(1);
  const [traceId] = traceIds;
  return spans.filter((s) => s.traceId === traceId);
}

function callEvents(span: ReceivedSpan): Map<string, Record<string, unknown>> {
  return new Map(
    span.events.filter((e) => e.name === 'td.call').map((e) => [String(e.attributes['td.call.id']), e.attributes]),
  );
}

const PROTOCOLS = [
  // The coordinator's name overridden by OTEL_SERVICE_NAME, the worker's built in...
  {
    protocol: 'http/protobuf',
    contentType: 'application/x-protobuf',
    coordinatorService: 'td-obs-coordinator',
    workerService: 'tool-dispatch-worker',
    coordinatorEnv: { OTEL_SERVICE_NAME: 'td-obs-coordinator' },
    workerEnv: {},
  },
  // ...and the other way round.
  {
    protocol: 'http/json',
    contentType: 'application/json',
    coordinatorService: 'tool-dispatch-coordinator',
    workerService: 'td-obs-worker',
    coordinatorEnv: {},
    workerEnv: { OTEL_SERVICE_NAME: 'td-obs-worker' },
  },
] as const;

describe.each(PROTOCOLS)('when the coordinator and a worker export over OTLP $protocol', (p) => {
  let receiver: OtlpReceiver;
  let stack: Stack;
  let workload: Workload;
  let spans: readonly ReceivedSpan[];
  let exitCodes: (number | null)[];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startStack(redis, {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: p.protocol },
      coordinatorEnv: p.coordinatorEnv,
      workerEnv: p.workerEnv,
    });
    workload = await runWorkload(stack);
    // SIGTERM: each process flushes its batch of spans before it exits.
    exitCodes = await stack.stopProcesses();
    spans = [...receiver.spans];
  }, TEST_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
  });

  it('answers the workload as expected (the statuses the trace must show)', () => {
    expect(workload.first.results.map((r) => r.status)).toEqual(['ok', 'ok', 'deduped', 'refused']);
    expect(workload.second.results.map((r) => r.status)).toEqual(['deduped', 'ok']);
    expect(workload.third.results.map((r) => r.status)).toEqual(['cached']);
  });

  it('exits 0 on SIGTERM, having flushed its spans in the protocol asked for', () => {
    expect(exitCodes).toEqual([0, 0]);
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(new Set(receiver.requests.map((r) => r.contentType))).toEqual(new Set([p.contentType]));
  });

  it('puts every span of a round in one trace: request → round → preflight, execute (on the worker), commit', () => {
    const trace = traceOf(spans, workload.first.round);
    expect(trace.map((s) => s.name).sort()).toEqual(
      // find_tools answered in pass 1 (under preflight); the calculate's time on the queue (wait-spans.test.ts).
      // find_tools answered by the coordinator is an executed call too: `execute find_tools`.
      [
        ROUND_ROUTE,
        'round',
        'preflight',
        'find_tools',
        'execute find_tools',
        'queue wait',
        'execute calculate',
        'commit',
      ].sort(),
    );
    const spanById = byId(trace);
    const request = only(trace, ROUND_ROUTE);
    const round = only(trace, 'round');
    expect(request.kind).toBe('server');
    expect(request.parentSpanId).toBeUndefined();
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/sessions/:session/runs/:run/rounds',
      'http.response.status_code': 200,
    });
    expect(round.parentSpanId).toBe(request.spanId);
    for (const name of ['preflight', 'execute calculate', 'commit']) {
      const span = only(trace, name);
      expect(spanById.get(span.parentSpanId ?? '')?.name, `parent of ${name}`).toBe('round');
    }
  });

  it('gives each call the coordinator answers (find_tools, file_history, error_history) an execute span with the td.* attributes, a child of the round', () => {
    expect(workload.history.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    const cases = [
      [workload.first.round, 'find_tools', 'c1'],
      [workload.history.round, 'file_history', 'h1'],
      [workload.history.round, 'error_history', 'h2'],
    ] as const;
    for (const [roundId, tool, callId] of cases) {
      const trace = traceOf(spans, roundId);
      const execute = only(trace, `execute ${tool}`);
      expect(execute.parentSpanId, tool).toBe(only(trace, 'round').spanId);
      expect(execute.serviceName, tool).toBe(p.coordinatorService);
      expect(execute.attributes, tool).toMatchObject({
        'td.session': workload.session,
        'td.run': roundId === workload.first.round ? workload.run : 'r3',
        'td.round': roundId,
        'td.call.id': callId,
        'gen_ai.tool.call.id': callId,
        'gen_ai.tool.name': tool,
        'gen_ai.operation.name': 'execute_tool',
        'td.status': 'ok',
        'td.queue.class': 'concurrent',
        'td.worker': 'coordinator',
      });
    }
  });

  it('runs the execute span in the worker process, a child of the coordinator’s round span', () => {
    const trace = traceOf(spans, workload.first.round);
    const round = only(trace, 'round');
    const execute = only(trace, 'execute calculate');
    expect(execute.parentSpanId).toBe(round.spanId);
    expect(execute.kind).toBe('consumer');
    expect(execute.serviceName).toBe(p.workerService);
    expect(execute.resource['process.pid']).not.toBe(round.resource['process.pid']);
    expect(execute.resource['process.pid']).toBe(stack.workers[0]?.child.pid);
    expect(round.resource['process.pid']).toBe(stack.coordinator.child.pid);
  });

  it('names the services by OTEL_SERVICE_NAME where it is set, else by the built-in names', () => {
    const trace = traceOf(spans, workload.first.round);
    for (const name of [ROUND_ROUTE, 'round', 'preflight', 'commit']) {
      expect(only(trace, name).serviceName, name).toBe(p.coordinatorService);
    }
    expect(only(trace, 'execute calculate').serviceName).toBe(p.workerService);
  });

  it('carries the session, run and round on the round, preflight, commit and execute spans', () => {
    const trace = traceOf(spans, workload.first.round);
    const ids = { 'td.session': workload.session, 'td.run': workload.run, 'td.round': workload.first.round };
    expect(only(trace, 'round').attributes).toMatchObject({ ...ids, 'td.calls': 4 });
    for (const name of ['preflight', 'commit', 'execute calculate']) {
      expect(only(trace, name).attributes, name).toMatchObject(ids);
    }
  });

  it('names the call, the tool, its status and the queue it came from on the execute span', () => {
    const execute = only(traceOf(spans, workload.first.round), 'execute calculate');
    expect(execute.attributes).toMatchObject({
      'td.call.id': 'c2',
      'gen_ai.tool.call.id': 'c2',
      'gen_ai.tool.name': 'calculate',
      'gen_ai.operation.name': 'execute_tool',
      'td.status': 'ok',
      'td.queue.class': 'concurrent',
      'messaging.system': 'bullmq',
      'messaging.destination.name': QUEUE_NAMES.concurrent,
      'messaging.operation.type': 'process',
    });
    expect(execute.attributes['td.worker']).toEqual(expect.any(String));
    expect(execute.attributes['messaging.message.id']).toEqual(expect.any(String));
    expect(execute.statusCode).not.toBe(2);
  });

  it('shows each call pre-flight decided on the preflight span, the in-round dedupe hit and the refusal among them', () => {
    const preflight = only(traceOf(spans, workload.first.round), 'preflight');
    expect(preflight.attributes).toMatchObject({
      'td.calls': 4,
      'td.dedupe.hits': 1,
      'td.cache.hits': 0,
      'td.stopped': 1,
    });
    const events = callEvents(preflight);
    expect([...events.keys()]).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(events.get('c1')).toMatchObject({ 'gen_ai.tool.name': 'find_tools' });
    // c2 goes on to run: pre-flight gives it no status.
    expect(events.get('c2')).toMatchObject({ 'gen_ai.tool.name': 'calculate' });
    expect(events.get('c2')).not.toHaveProperty('td.status');
    expect(events.get('c3')).toMatchObject({
      'gen_ai.tool.name': 'calculate',
      'td.status': 'deduped',
      'td.dedupe.hit': true,
    });
    expect(events.get('c4')).toMatchObject({
      'gen_ai.tool.name': 'calculate',
      'td.status': 'refused',
      'td.error.code': 'refused',
    });
  });

  it('records every call’s final status on the round span', () => {
    const round = only(traceOf(spans, workload.first.round), 'round');
    const events = callEvents(round);
    expect([...events.keys()]).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(events.get('c1')).toMatchObject({ 'gen_ai.tool.name': 'find_tools', 'td.status': 'ok' });
    expect(events.get('c2')).toMatchObject({ 'gen_ai.tool.name': 'calculate', 'td.status': 'ok' });
    expect(events.get('c3')).toMatchObject({ 'td.status': 'deduped', 'td.dedupe.hit': true, 'td.deduped_from': 'c2' });
    expect(events.get('c4')).toMatchObject({ 'td.status': 'refused', 'td.error.code': 'refused' });
    expect(round.attributes).toMatchObject({ 'td.calls': 4, 'td.dedupe.hits': 1, 'td.cache.hits': 0, 'td.stopped': 1 });
  });

  it('shows a dedupe hit from an earlier round on that round’s preflight span', () => {
    const trace = traceOf(spans, workload.second.round);
    expect(trace.map((s) => s.name).sort()).toEqual(
      [ROUND_ROUTE, 'round', 'preflight', 'queue wait', 'execute fetch_page', 'commit'].sort(),
    );
    const preflight = only(trace, 'preflight');
    expect(preflight.attributes).toMatchObject({ 'td.dedupe.hits': 1, 'td.cache.hits': 0 });
    expect(callEvents(preflight).get('d1')).toMatchObject({
      'td.status': 'deduped',
      'td.dedupe.hit': true,
      'td.deduped_from': 'c2',
    });
    expect(only(trace, 'execute fetch_page').attributes).toMatchObject({ 'td.call.id': 'd2', 'td.status': 'ok' });
  });

  it('shows a cache hit on the preflight span, and no execute span for it', () => {
    const trace = traceOf(spans, workload.third.round);
    expect(trace.map((s) => s.name).sort()).toEqual([ROUND_ROUTE, 'round', 'preflight', 'commit'].sort());
    const preflight = only(trace, 'preflight');
    expect(preflight.attributes).toMatchObject({ 'td.cache.hits': 1, 'td.dedupe.hits': 0 });
    expect(callEvents(preflight).get('e1')).toMatchObject({
      'gen_ai.tool.name': 'fetch_page',
      'td.status': 'cached',
      'td.cache.hit': true,
    });
  });

  it('gives each round a trace of its own', () => {
    const ids = [workload.first, workload.second, workload.third].map((r) => traceOf(spans, r.round)[0]?.traceId);
    expect(new Set(ids).size).toBe(3);
  });
});
