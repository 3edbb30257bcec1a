import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ATTR_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_ROUND,
  ATTR_SESSION,
  ATTR_STATUS,
  callAttributes,
  extractContext,
  initTracing,
  injectContext,
  SpanKind,
  setSpanResult,
} from '@tool-dispatch/shared/tracing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.js';

const run = promisify(execFile);
const TRACING_SOURCE = fileURLToPath(new URL('../packages/shared/src/tracing/index.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(() => receiver.close());
afterEach(() => receiver.clear());

function byName(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((s) => s.name === name);
  if (!span) throw new Error(`no span named ${name} among ${spans.map((s) => s.name).join(', ')}`);
  return span;
}

/** A round exported in-process: round → preflight, execute (from a serialised carrier), commit. */
async function exportRound(env: NodeJS.ProcessEnv): Promise<void> {
  const tracing = initTracing('td-test', { env });
  expect(tracing.enabled).toBe(true);
  await tracing.withSpan({ name: 'round', attributes: { [ATTR_SESSION]: 's1', [ATTR_ROUND]: 'r1' } }, async () => {
    await tracing.withSpan('preflight', () => {});
    const job = JSON.stringify({ callId: 'c1', trace: injectContext() });
    const { trace } = JSON.parse(job) as { trace: unknown };
    await tracing.withSpan(
      {
        name: 'execute read_files',
        kind: SpanKind.CONSUMER,
        parent: extractContext(trace),
        attributes: callAttributes({ session: 's1', round: 'r1', toolCallId: 'c1', name: 'read_files' }),
      },
      (span) => setSpanResult(span, { status: 'ok' }),
    );
    await tracing.withSpan('commit', () => {});
  });
  await tracing.shutdown();
}

function expectRoundTree(spans: readonly ReceivedSpan[]): void {
  const round = byName(spans, 'round');
  expect(round.parentSpanId).toBeUndefined();
  for (const name of ['preflight', 'execute read_files', 'commit']) {
    const child = byName(spans, name);
    expect(child.traceId).toBe(round.traceId);
    expect(child.parentSpanId).toBe(round.spanId);
  }
  const exec = byName(spans, 'execute read_files');
  expect(exec.kind).toBe('consumer');
  expect(exec.attributes).toMatchObject({
    [ATTR_SESSION]: 's1',
    [ATTR_ROUND]: 'r1',
    [ATTR_CALL_ID]: 'c1',
    [ATTR_GEN_AI_TOOL_NAME]: 'read_files',
    [ATTR_STATUS]: 'ok',
  });
  expect(round.serviceName).toBe('td-test');
}

describe('the OTLP receiver', () => {
  it('decodes http/protobuf, the default protocol, with the span tree and attributes', async () => {
    await exportRound({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    expectRoundTree(receiver.spans);
    expect(receiver.requests.map((r) => r.contentType)).toContain('application/x-protobuf');
  });

  it('decodes http/json when OTEL_EXPORTER_OTLP_PROTOCOL=http/json', async () => {
    await exportRound({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expectRoundTree(receiver.spans);
    expect(receiver.requests.every((r) => r.contentType === 'application/json')).toBe(true);
  });

  it('decodes events, statuses and non-string attribute values alike in both protocols', async () => {
    for (const protocol of ['http/protobuf', 'http/json']) {
      receiver.clear();
      const tracing = initTracing('td-test', {
        env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.tracesUrl, OTEL_EXPORTER_OTLP_PROTOCOL: protocol },
      });
      await tracing.withSpan({ name: 'values', attributes: { n: 3, f: 1.5, b: true, list: ['a', 'b'] } }, (span) => {
        span.addEvent('td.call', { 'td.call.id': 'c9', 'td.dedupe.hit': true });
        setSpanResult(span, { status: 'error', error: { code: 'worker_lost', message: 'gone' } });
      });
      await tracing.shutdown();
      const [span] = receiver.spans;
      expect(span?.attributes, protocol).toMatchObject({ n: 3, f: 1.5, b: true, list: ['a', 'b'] });
      expect(span?.events, protocol).toEqual([
        { name: 'td.call', attributes: { 'td.call.id': 'c9', 'td.dedupe.hit': true } },
      ]);
      expect({ code: span?.statusCode, message: span?.statusMessage }, protocol).toEqual({ code: 2, message: 'gone' });
    }
  });

  it('parents a span exported by another process under the span whose context it was handed', async () => {
    const tracing = initTracing('td-coordinator-test', { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    const carrier = await tracing.withSpan('round', async () => JSON.stringify(injectContext()));
    await tracing.shutdown();
    // The child process is a separate node with its own SDK, as a worker would be.
    const script = `
      const t = await import(${JSON.stringify(TRACING_SOURCE)});
      const tracing = t.initTracing('td-worker-test');
      await tracing.withSpan({ name: 'execute calculate', parent: t.extractContext(JSON.parse(process.env.CARRIER)) }, () => {});
      await tracing.shutdown();
    `;
    await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, CARRIER: carrier, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: '' },
      timeout: 20_000,
    });
    const spans = await receiver.waitForNames(['round', 'execute calculate']);
    const round = byName(spans, 'round');
    const exec = byName(spans, 'execute calculate');
    expect(exec.traceId).toBe(round.traceId);
    expect(exec.parentSpanId).toBe(round.spanId);
    expect([round.serviceName, exec.serviceName]).toEqual(['td-coordinator-test', 'td-worker-test']);
  });

  it('answers 404 off /v1/traces and 415 for a content type it cannot read', async () => {
    expect((await fetch(`${receiver.url}/v1/metrics`, { method: 'POST', body: '{}' })).status).toBe(404);
    const res = await fetch(receiver.tracesUrl, {
      method: 'POST',
      body: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
  });
});
