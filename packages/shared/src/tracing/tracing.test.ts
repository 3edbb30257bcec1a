import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ATTR_CACHE_HIT,
  ATTR_CACHE_HITS,
  ATTR_CALL_ID,
  ATTR_DEDUPE_HIT,
  ATTR_DEDUPE_HITS,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_STATUS,
  ATTR_STOPPED,
  callAttributes,
  extractContext,
  initTracing,
  injectContext,
  recordCallEvents,
  resolveTracingConfig,
  SpanStatusCode,
  setSpanOutcome,
  setSpanResult,
  type Tracing,
} from './index.js';

describe('resolveTracingConfig', () => {
  it('is disabled when no OTLP endpoint is set', () => {
    const config = resolveTracingConfig('td-coordinator', {});
    expect(config).toMatchObject({ enabled: false, url: undefined, serviceName: 'td-coordinator' });
  });

  it('appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT and defaults to http/protobuf', () => {
    const config = resolveTracingConfig('x', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/' });
    expect(config).toMatchObject({ enabled: true, url: 'http://jaeger:4318/v1/traces', protocol: 'http/protobuf' });
  });

  it('uses OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as written, over the base endpoint', () => {
    const config = resolveTracingConfig('x', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom',
    });
    expect(config.url).toBe('http://b:4318/custom');
  });

  it('selects http/json from OTEL_EXPORTER_OTLP_PROTOCOL, the traces-specific variable winning', () => {
    expect(resolveTracingConfig('x', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).protocol).toBe('http/json');
    expect(
      resolveTracingConfig('x', {
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }).protocol,
    ).toBe('http/protobuf');
  });

  it('rejects grpc, which this service does not speak, saying what to use', () => {
    expect(() => resolveTracingConfig('x', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/http\/protobuf/);
  });

  it('rejects an endpoint that is not an http(s) URL', () => {
    expect(() => resolveTracingConfig('x', { OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toThrow(/http\(s\) URL/);
  });

  it('lets OTEL_SERVICE_NAME win over OTEL_RESOURCE_ATTRIBUTES and the built-in name', () => {
    const env = {
      OTEL_SERVICE_NAME: 'mine',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=theirs,deployment.environment=prod',
    };
    const config = resolveTracingConfig('td-worker', env);
    expect(config.serviceName).toBe('mine');
    expect(config.resourceAttributes).toEqual({ 'deployment.environment': 'prod' });
    expect(resolveTracingConfig('td-worker', { OTEL_RESOURCE_ATTRIBUTES: 'service.name=theirs' }).serviceName).toBe(
      'theirs',
    );
  });

  it('percent-decodes OTEL_RESOURCE_ATTRIBUTES', () => {
    const config = resolveTracingConfig('x', { OTEL_RESOURCE_ATTRIBUTES: 'team=a%2Cb,k8s.pod.name=p%3D1' });
    expect(config.resourceAttributes).toEqual({ team: 'a,b', 'k8s.pod.name': 'p=1' });
  });

  it('is disabled by OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none even with an endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318' };
    expect(resolveTracingConfig('x', { ...endpoint, OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(resolveTracingConfig('x', { ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });
});

describe('when tracing is off', () => {
  it('returns a no-op tracer whose spans record nothing and whose helpers still run the code', async () => {
    const tracing = initTracing('td-test', { env: {} });
    expect(tracing.enabled).toBe(false);
    const value = await tracing.withSpan({ name: 'round', attributes: { a: 1 } }, (span) => {
      expect(span.isRecording()).toBe(false);
      return injectContext();
    });
    expect(value).toEqual({});
    await tracing.shutdown();
  });

  it('rethrows what the function throws', async () => {
    const tracing = initTracing('td-test', { env: {} });
    await expect(
      tracing.withSpan('x', () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });
});

describe('when tracing is on', () => {
  let tracing: Tracing | undefined;
  // Shutting a provider down stops its exporter, so each test gets a fresh one.
  let exporter = new InMemorySpanExporter();
  afterEach(async () => {
    await tracing?.shutdown();
    exporter = new InMemorySpanExporter();
  });

  function start(): Tracing {
    tracing = initTracing('td-test', { env: {}, exporter, processor: 'simple' });
    return tracing;
  }

  it('nests spans started inside withSpan under the active one', async () => {
    const t = start();
    await t.withSpan('round', async () => {
      await t.withSpan('preflight', async () => {});
      await t.withSpan('commit', async () => {});
    });
    const spans = exporter.getFinishedSpans();
    const round = spans.find((s) => s.name === 'round')!;
    for (const name of ['preflight', 'commit']) {
      const child = spans.find((s) => s.name === name)!;
      expect(child.spanContext().traceId).toBe(round.spanContext().traceId);
      expect(child.parentSpanContext?.spanId).toBe(round.spanContext().spanId);
    }
  });

  it('carries the trace through a JSON-serialised carrier to a span started with the extracted parent', async () => {
    const t = start();
    const carrier = await t.withSpan('round', () => injectContext());
    expect(carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const wire = JSON.parse(JSON.stringify({ job: 1, trace: carrier })) as { trace: unknown };
    await t.withSpan({ name: 'execute read_files', parent: extractContext(wire.trace) }, () => {});
    const round = exporter.getFinishedSpans().find((s) => s.name === 'round')!;
    const exec = exporter.getFinishedSpans().find((s) => s.name === 'execute read_files')!;
    expect(exec.spanContext().traceId).toBe(round.spanContext().traceId);
    expect(exec.parentSpanContext?.spanId).toBe(round.spanContext().spanId);
  });

  it('starts a new trace from a carrier that holds nothing usable', async () => {
    const t = start();
    await t.withSpan({ name: 'execute x', parent: extractContext({ traceparent: 42, other: ['a'] }) }, () => {});
    expect(exporter.getFinishedSpans()[0]?.parentSpanContext).toBeUndefined();
  });

  it('reads headers given as arrays, as node gives them', async () => {
    const t = start();
    const carrier = await t.withSpan('round', () => injectContext());
    const ctx = extractContext({ TraceParent: [carrier.traceparent as string] });
    await t.withSpan({ name: 'child', parent: ctx }, () => {});
    const round = exporter.getFinishedSpans().find((s) => s.name === 'round');
    const child = exporter.getFinishedSpans().find((s) => s.name === 'child');
    expect(child?.parentSpanContext?.spanId).toBe(round?.spanContext().spanId);
  });

  it('records an exception and ERROR status when the function throws, and still ends the span', async () => {
    const t = start();
    await expect(
      t.withSpan('commit', () => {
        throw new Error('store down');
      }),
    ).rejects.toThrow('store down');
    const [span] = exporter.getFinishedSpans();
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'store down' });
    expect(span?.events.map((e) => e.name)).toContain('exception');
  });

  it('sets td.status and error.type on an execute span whose call ended error', async () => {
    const t = start();
    await t.withSpan(
      { name: 'execute run_command', attributes: callAttributes({ toolCallId: 'c1', name: 'run_command' }) },
      (span) => setSpanResult(span, { status: 'error', error: { code: 'timeout', message: 'deadline passed' } }),
    );
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      [ATTR_CALL_ID]: 'c1',
      [ATTR_GEN_AI_TOOL_NAME]: 'run_command',
      [ATTR_STATUS]: 'error',
      [ATTR_ERROR_TYPE]: 'timeout',
    });
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('records an executor outcome with its error code and the worker it ran on', async () => {
    const t = start();
    await t.withSpan('execute fetch_page', (span) =>
      setSpanOutcome(span, { status: 'error', code: 'worker_lost', message: 'gone', durationMs: 5, ranOn: 'w-1' }),
    );
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      [ATTR_STATUS]: 'error',
      [ATTR_ERROR_TYPE]: 'worker_lost',
      'td.worker': 'w-1',
    });
  });

  it('makes dedupe and cache hits visible on the preflight span, per call and in total', async () => {
    const t = start();
    await t.withSpan('preflight', (span) =>
      recordCallEvents(span, [
        { id: 'a', name: 'read_files', status: 'deduped', dedupedFrom: 'z' },
        { id: 'b', name: 'fetch_page', status: 'cached' },
        { id: 'c', name: 'nope', status: 'refused', error: { code: 'refused', message: 'not loaded' } },
        { id: 'd', name: 'read_files' },
      ]),
    );
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({ [ATTR_DEDUPE_HITS]: 1, [ATTR_CACHE_HITS]: 1, [ATTR_STOPPED]: 1 });
    expect(span?.events.map((e) => e.attributes?.[ATTR_CALL_ID])).toEqual(['a', 'b', 'c', 'd']);
    expect(span?.events[0]?.attributes).toMatchObject({ [ATTR_DEDUPE_HIT]: true, [ATTR_STATUS]: 'deduped' });
    expect(span?.events[1]?.attributes).toMatchObject({ [ATTR_CACHE_HIT]: true });
    expect(span?.events[3]?.attributes?.[ATTR_STATUS]).toBeUndefined();
  });

  it('names the service from OTEL_SERVICE_NAME over the built-in name', async () => {
    tracing = initTracing('td-coordinator', { env: { OTEL_SERVICE_NAME: 'edge-td' }, exporter, processor: 'simple' });
    await tracing.withSpan('round', () => {});
    expect(exporter.getFinishedSpans()[0]?.resource.attributes['service.name']).toBe('edge-td');
  });
});
