// DESIGN.md "Observability", the waits of a round: `confirm wait` (the gate), `admission wait`
// (a call held back by the round's order or the run's limit, with why), `queue wait` (job added
// → started, on the worker) and `find_tools` (answered in pass 1), from real coordinator and
// worker processes exporting OTLP to a receiver in the test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { request } from './processes.js';
import { runTool, type Stack, startStack, submitRound } from './stack.js';

const SETUP_TIMEOUT_MS = 90_000;
/** How long the serial call of round 1 runs, and how long round 2's confirmation waits before it is approved. */
const SERIAL_MS = 300;
const CONFIRM_AFTER_MS = 300;

let redis: TestRedis;
let receiver: OtlpReceiver;
let stack: Stack;
let spans: ReceivedSpan[];
let rounds: { first: string; second: string };

const ms = (nanos: bigint) => Number(nanos / 1_000_000n);
const durationMs = (s: ReceivedSpan) => ms(s.endTimeUnixNano - s.startTimeUnixNano);

/** The spans of one round's trace. */
function traceOf(round: string): ReceivedSpan[] {
  const roundSpan = spans.find((s) => s.name === 'round' && s.attributes['td.round'] === round);
  if (!roundSpan) throw new Error(`no round span for ${round}: ${spans.map((s) => s.name).join(', ')}`);
  return spans.filter((s) => s.traceId === roundSpan.traceId);
}

const one = (trace: readonly ReceivedSpan[], name: string, attrs: Record<string, unknown> = {}) => {
  const found = trace.filter((s) => s.name === name && Object.entries(attrs).every(([k, v]) => s.attributes[k] === v));
  expect(
    found.map((s) => s.name),
    `${name} ${JSON.stringify(attrs)}`,
  ).toEqual([name]);
  return found[0] as ReceivedSpan;
};

async function runWorkload(): Promise<void> {
  const session = 's-waits';
  const put = await request(`${stack.coordinator.url}/v1/sessions/${session}`, {
    method: 'PUT',
    body: { provider: 'openai', autoApprove: ['run_command'] },
  });
  if (put.status !== 200) throw new Error(`PUT session: ${put.status} ${put.text}`);
  // A serial call, then two concurrent ones: they wait for it (the serial barrier), and with
  // MAX_CONCURRENT_TOOLS=1 the second of them waits for the first (the run's limit).
  const first = await submitRound(stack, { session, run: 'r1' }, [
    { id: 'f', name: 'find_tools', args: { names: ['calculate', 'run_command', 'edit_file'] } },
    runTool('x', 'run_command', { command: `sleep ${SERIAL_MS / 1000}` }),
    runTool('a', 'calculate', { expression: '1 + 1' }),
    runTool('b', 'calculate', { expression: '2 + 2' }),
  ]);
  expect(first.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
  const second = submitRound(stack, { session, run: 'r1' }, [
    runTool('e', 'edit_file', { path: 'a.txt', content: 'x' }),
  ]);
  const base = `${stack.coordinator.url}/v1/sessions/${session}/confirmations`;
  let pending: { confirmationId: string }[] = [];
  for (const deadline = Date.now() + 10_000; pending.length === 0; ) {
    if (Date.now() > deadline) throw new Error('no confirmation asked');
    pending = (await request(base)).json.confirmations;
  }
  await new Promise((r) => setTimeout(r, CONFIRM_AFTER_MS));
  const answer = await request(`${base}/${pending[0]?.confirmationId}`, { body: { approve: true } });
  if (answer.status !== 200) throw new Error(`approve: ${answer.status} ${answer.text}`);
  rounds = { first: first.round, second: (await second).round };
}

beforeAll(async () => {
  redis = await startRedis();
  receiver = await startOtlpReceiver();
  stack = await startStack(redis, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    coordinatorEnv: { MAX_CONCURRENT_TOOLS: '1' },
  });
  await runWorkload();
  await stack.stopProcesses(); // each flushes its spans on SIGTERM
  spans = [...receiver.spans];
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await redis?.stop();
});

describe('a round whose calls wait', () => {
  it('has a find_tools span under preflight, with how many definitions it found', () => {
    const trace = traceOf(rounds.first);
    const span = one(trace, 'find_tools');
    expect(span.parentSpanId).toBe(one(trace, 'preflight').spanId);
    expect(span.attributes).toMatchObject({
      'td.call.id': 'f',
      'gen_ai.tool.name': 'find_tools',
      'td.find_tools.found': 3,
    });
  });

  it('has an admission wait with reason serial_barrier for each call after the serial one, as long as it ran', () => {
    const trace = traceOf(rounds.first);
    const round = one(trace, 'round');
    // The serial call itself waited only for the step before it (find_tools, answered in pass 1).
    const serial = one(trace, 'admission wait', { 'td.call.id': 'x', 'td.wait.reason': 'serial_barrier' });
    for (const id of ['a', 'b']) {
      const span = one(trace, 'admission wait', { 'td.call.id': id, 'td.wait.reason': 'serial_barrier' });
      expect(span.parentSpanId).toBe(round.spanId);
      // Every wait of pass 2 starts at the pass's start: a and b waited for the serial call's whole run on top of
      // what it waited (compared with each other, not with a clock, so a loaded machine cannot fail it).
      expect(span.startTimeUnixNano).toBe(serial.startTimeUnixNano);
      expect(durationMs(span) - durationMs(serial)).toBeGreaterThanOrEqual(SERIAL_MS - 20);
    }
  });

  it('has an admission wait with reason run_limit for the call the run’s limit held back', () => {
    const trace = traceOf(rounds.first);
    const limited = trace.filter((s) => s.name === 'admission wait' && s.attributes['td.wait.reason'] === 'run_limit');
    expect(limited.map((s) => s.attributes['td.call.id'])).toHaveLength(1);
    expect(['a', 'b']).toContain(limited[0]?.attributes['td.call.id']);
  });

  it('has a queue wait on the worker for each executed call, from its enqueue to its execute span', () => {
    const trace = traceOf(rounds.first);
    for (const id of ['x', 'a', 'b']) {
      const wait = one(trace, 'queue wait', { 'td.call.id': id });
      const execute = trace.find((s) => s.name.startsWith('execute ') && s.attributes['td.call.id'] === id);
      expect(wait.serviceName).toBe('tool-dispatch-worker');
      expect(wait.attributes).toMatchObject({ 'td.wait.reason': 'queue', 'messaging.system': 'bullmq' });
      expect(wait.parentSpanId).toBe(execute?.parentSpanId);
      expect(wait.endTimeUnixNano).toBeLessThanOrEqual(execute?.startTimeUnixNano ?? 0n);
    }
    // The calls admitted after the serial one waited on the queue for no longer than their round ran.
    expect(durationMs(one(trace, 'queue wait', { 'td.call.id': 'a' }))).toBeLessThan(durationMs(one(trace, 'round')));
  });

  it('has a confirm wait under the round, as long as the person took, with the decision per call', () => {
    const trace = traceOf(rounds.second);
    const span = one(trace, 'confirm wait');
    expect(span.parentSpanId).toBe(one(trace, 'round').spanId);
    expect(span.attributes).toMatchObject({ 'td.confirmations': 1, 'td.wait.reason': 'confirm' });
    expect(durationMs(span)).toBeGreaterThanOrEqual(CONFIRM_AFTER_MS - 20);
    expect(span.events.map((e) => e.attributes)).toEqual([
      { 'td.call.id': 'e', 'gen_ai.tool.name': 'edit_file', 'td.confirm.decision': 'approved' },
    ]);
  });

  it('has no confirm wait in a round that asked nobody', () => {
    expect(traceOf(rounds.first).filter((s) => s.name === 'confirm wait')).toEqual([]);
  });
});
