// The `@tool-dispatch/shared/tracing` door (see package.json exports): OpenTelemetry set-up, span names, attributes.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type Attributes,
  type Context,
  context,
  type Link,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { ExecOutcome } from './execution.js';
import type { ResultError, Status } from './result.js';

/** Name of the instrumentation scope every tool-dispatch span is created under. */
export const TRACER_NAME = 'tool-dispatch';

// Span names (DESIGN.md "Observability"): one trace per round.
export const SPAN_ROUND = 'round';
export const SPAN_PREFLIGHT = 'preflight';
export const SPAN_COMMIT = 'commit';
/** The round's wait for a person's answers to its confirmations (the gate), child of `round`. */
export const SPAN_CONFIRM_WAIT = 'confirm wait';
/** A call's wait in pass 2 before it may start (`td.wait.reason`), child of `round`. */
export const SPAN_ADMISSION_WAIT = 'admission wait';
/** A call's time on the queue, from its job's enqueue to its start on a worker (distributed mode). */
export const SPAN_QUEUE_WAIT = 'queue wait';
/** find_tools, answered by the coordinator from the catalog in pass 1: child of `preflight`. */
export const SPAN_FIND_TOOLS = 'find_tools';
/** `execute <tool>`: one per executed call, on the worker (or in-process in embedded mode). */
export function executeSpanName(tool: string): string {
  return `execute ${tool}`;
}

// Our own attributes.
export const ATTR_SESSION = 'td.session';
export const ATTR_RUN = 'td.run';
export const ATTR_ROUND = 'td.round';
export const ATTR_CALL_ID = 'td.call.id';
export const ATTR_STATUS = 'td.status';
export const ATTR_TENANT = 'td.tenant';
/** Number of calls in the round (on `round` and `preflight`). */
export const ATTR_CALL_COUNT = 'td.calls';
export const ATTR_DEDUPE_HIT = 'td.dedupe.hit';
export const ATTR_DEDUPE_HITS = 'td.dedupe.hits';
export const ATTR_DEDUPED_FROM = 'td.deduped_from';
export const ATTR_CACHE_HIT = 'td.cache.hit';
export const ATTR_CACHE_HITS = 'td.cache.hits';
/** Calls the pass ended without running them (refused, unknown, invalid, denied, schema). */
export const ATTR_STOPPED = 'td.stopped';
export const ATTR_ERROR_CODE = 'td.error.code';
export const ATTR_QUEUE_CLASS = 'td.queue.class';
export const ATTR_WORKER = 'td.worker';
export const ATTR_ATTEMPT = 'td.attempt';
export const ATTR_IDEMPOTENCY_KEY = 'td.idempotency_key';
/** Why a call waited (WaitReason), on the wait spans. */
export const ATTR_WAIT_REASON = 'td.wait.reason';
/** Confirmations the round asked for, on `confirm wait`. */
export const ATTR_CONFIRMATIONS = 'td.confirmations';
/** `approved`, or who denied it (`person`, `timeout`, `cancelled`), on `confirm wait`'s per-call events. */
export const ATTR_CONFIRM_DECISION = 'td.confirm.decision';
/** Definitions a find_tools call returned. */
export const ATTR_FIND_TOOLS_FOUND = 'td.find_tools.found';

/**
 * Why a call waited: `serial_barrier` (the round's order: a serial call waits for everything
 * before it, and what follows waits for it), `run_limit` (MAX_CONCURRENT_TOOLS calls of the run
 * in flight), `serial_lane` (another serial call of the run, of another round, in flight),
 * `confirm` (a person's approval), `queue` (on the queue until a worker started it).
 */
export type WaitReason = 'serial_barrier' | 'run_limit' | 'serial_lane' | 'confirm' | 'queue';

// OpenTelemetry semantic conventions (gen_ai.* and messaging.* are still "development").
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
/** Value of `gen_ai.operation.name` on `execute <tool>` spans. */
export const GEN_AI_OPERATION_EXECUTE_TOOL = 'execute_tool';
export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';
/** Value of `messaging.system` for jobs on BullMQ (not a registered value; semconv allows custom ones). */
export const MESSAGING_SYSTEM_BULLMQ = 'bullmq';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_URL_PATH = 'url.path';
export const ATTR_SERVICE_NAME = 'service.name';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** What the OTEL_* environment asks for, resolved once. */
export interface TracingConfig {
  /** False when no OTLP endpoint is set, or OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none say so. */
  enabled: boolean;
  /** Full URL spans are POSTed to (…/v1/traces); undefined when disabled. */
  url: string | undefined;
  protocol: OtlpProtocol;
  serviceName: string;
  /** From OTEL_RESOURCE_ATTRIBUTES (service.name already folded into serviceName). */
  resourceAttributes: Record<string, string>;
}

export interface TracingOptions {
  /** Defaults to process.env. Headers, compression and timeout are read by the exporter from process.env. */
  env?: NodeJS.ProcessEnv;
  /** Export here instead of OTLP (tests: InMemorySpanExporter); tracing is then on whatever the env says. */
  exporter?: SpanExporter;
  /** `batch` (default) queues spans and sends them in the background; `simple` exports each span as it ends. */
  processor?: 'batch' | 'simple';
}

/** A span to start: a name alone, or with attributes, kind, an explicit parent context and links. */
export interface SpanSpec {
  name: string;
  attributes?: Attributes;
  kind?: SpanKind;
  /** Parent context; defaults to the active one. Use `extractContext(job.trace)` on a worker. */
  parent?: Context;
  links?: Link[];
}

export interface Tracing {
  /** True when spans are recorded and exported; false means `tracer` is a no-op. */
  readonly enabled: boolean;
  readonly serviceName: string;
  readonly tracer: Tracer;
  /** Runs `fn` inside a new active span of this tracer (see `withSpan`). */
  withSpan<T>(spec: SpanSpec | string, fn: (span: Span) => T | Promise<T>): Promise<T>;
  /** Sends every ended span now. */
  forceFlush(): Promise<void>;
  /** Flushes the batch and stops exporting; call on SIGTERM before exiting. Idempotent. */
  shutdown(): Promise<void>;
}

/** W3C trace context (traceparent, tracestate) and baggage, used for job payloads and HTTP headers. */
const PROPAGATOR: TextMapPropagator = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

const NOOP_PROVIDER = new ProxyTracerProvider();

let contextManagerInstalled = false;
/** The Tracing that registered itself as the global tracer provider, if any. */
let globalOwner: Tracing | undefined;

function parseResourceAttributes(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(value);
    } catch {
      out[key] = value; // not percent-encoded after all; keep it as written
    }
  }
  return out;
}

function resolveProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const raw = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(raw)} is not supported: use http/protobuf (default) or http/json, on the OTLP/HTTP port (4318)`,
  );
}

function resolveUrl(env: NodeJS.ProcessEnv): string | undefined {
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The signal-specific endpoint is used as written; the base one gets /v1/traces (OTLP exporter spec).
  const url = signal || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (url === undefined) return undefined;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new Error(`OTLP traces endpoint must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  return url;
}

/**
 * Reads the standard OTEL_* variables; `defaultServiceName` is used when neither OTEL_SERVICE_NAME
 * nor a resource attribute names the service. `initTracing` is the API; exported for its test. @internal
 */
export function resolveTracingConfig(defaultServiceName: string, env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const resourceAttributes = parseResourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceAttributes[ATTR_SERVICE_NAME] || defaultServiceName;
  delete resourceAttributes[ATTR_SERVICE_NAME];
  const protocol = resolveProtocol(env);
  const disabled =
    env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' ||
    (env.OTEL_TRACES_EXPORTER ?? '')
      .split(',')
      .map((s) => s.trim())
      .includes('none');
  const url = disabled ? undefined : resolveUrl(env);
  return { enabled: url !== undefined, url, protocol, serviceName, resourceAttributes };
}

function installContextManager(): void {
  if (contextManagerInstalled) return;
  const manager = new AsyncLocalStorageContextManager().enable();
  // false when someone else already installed one; theirs propagates context just as well.
  if (!context.setGlobalContextManager(manager)) manager.disable();
  contextManagerInstalled = true;
}

function disabledTracing(serviceName: string): Tracing {
  const tracer = NOOP_PROVIDER.getTracer(TRACER_NAME);
  return {
    enabled: false,
    serviceName,
    tracer,
    withSpan: (spec, fn) => withSpan(tracer, spec, fn),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}

function buildExporter(config: TracingConfig): SpanExporter {
  const url = config.url as string;
  return config.protocol === 'http/json' ? new OtlpJsonExporter({ url }) : new OtlpProtoExporter({ url });
}

/**
 * Sets up tracing from the OTEL_* environment: OTLP/HTTP export (protobuf, or JSON when
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/json) through a batch processor, W3C propagation and
 * async-local context. With no endpoint set the tracer is a no-op and costs next to nothing.
 * The first enabled instance also becomes the global tracer provider and propagator.
 */
export function initTracing(defaultServiceName: string, options: TracingOptions = {}): Tracing {
  const config = resolveTracingConfig(defaultServiceName, options.env ?? process.env);
  if (!config.enabled && options.exporter === undefined) return disabledTracing(config.serviceName);

  const exporter = options.exporter ?? buildExporter(config);
  const processor: SpanProcessor =
    options.processor === 'simple' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const resource = defaultResource().merge(
    resourceFromAttributes({
      'service.instance.id': randomUUID(),
      'host.name': hostname(),
      'process.pid': process.pid,
      ...config.resourceAttributes,
      [ATTR_SERVICE_NAME]: config.serviceName,
    }),
  );
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  installContextManager();
  const tracer = provider.getTracer(TRACER_NAME);

  let stopped: Promise<void> | undefined;
  const tracing: Tracing = {
    enabled: true,
    serviceName: config.serviceName,
    tracer,
    withSpan: (spec, fn) => withSpan(tracer, spec, fn),
    forceFlush: () => provider.forceFlush(),
    shutdown: () => {
      stopped ??= provider.shutdown().finally(function releaseGlobals() {
        if (globalOwner !== tracing) return;
        trace.disable();
        propagation.disable();
        globalOwner = undefined;
      });
      return stopped;
    },
  };
  if (globalOwner === undefined && trace.setGlobalTracerProvider(provider)) {
    propagation.setGlobalPropagator(PROPAGATOR);
    globalOwner = tracing;
  }
  return tracing;
}

/**
 * Starts an active span, runs `fn` in it and ends it, also when `fn` throws: the exception is
 * recorded and the span's status set to ERROR before it is rethrown.
 */
export async function withSpan<T>(
  tracer: Tracer,
  spec: SpanSpec | string,
  fn: (span: Span) => T | Promise<T>,
): Promise<T> {
  const { name, attributes, kind, parent, links } = typeof spec === 'string' ? { name: spec } : spec;
  const spanOptions = {
    ...(attributes === undefined ? {} : { attributes }),
    ...(kind === undefined ? {} : { kind }),
    ...(links === undefined ? {} : { links }),
  };
  return tracer.startActiveSpan(name, spanOptions, parent ?? context.active(), async function inSpan(span) {
    try {
      return await fn(span);
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      span.recordException(error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** A span that already happened (a wait measured elsewhere), with its own start and end times (ms since the epoch). */
export function recordSpan(
  tracer: Tracer,
  spec: Omit<SpanSpec, 'links'> & { startTimeMs: number; endTimeMs: number },
): void {
  const { name, attributes, kind, parent, startTimeMs, endTimeMs } = spec;
  const span = tracer.startSpan(
    name,
    {
      startTime: startTimeMs,
      ...(attributes === undefined ? {} : { attributes }),
      ...(kind === undefined ? {} : { kind }),
    },
    parent ?? context.active(),
  );
  span.end(Math.max(startTimeMs, endTimeMs));
}

/** The process's tracing, once `initTracing` enabled it (workers' execute spans use it), else undefined. */
export function globalTracing(): Tracing | undefined {
  return globalOwner;
}

/** A serialisable carrier of the W3C trace context (and baggage), for a job payload's `trace` field. */
export type TraceCarrier = Record<string, string>;

/** The active (or given) context as `{traceparent, tracestate?, baggage?}`; empty when no span is active. */
export function injectContext(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  PROPAGATOR.inject(ctx, carrier, {
    set(target, key, value) {
      target[key] = value;
    },
  });
  return carrier;
}

/**
 * The context a carrier describes, on top of `base` (the root context by default, so a
 * worker's execute span never nests under whatever happened to be active). Accepts unknown
 * input (a job payload, HTTP headers): anything that is not a string, or a list of them, is ignored.
 */
export function extractContext(carrier: unknown, base: Context = ROOT_CONTEXT): Context {
  const headers: Record<string, string> = {};
  if (typeof carrier === 'object' && carrier !== null) {
    for (const [key, value] of Object.entries(carrier)) {
      if (typeof value === 'string') headers[key.toLowerCase()] = value;
      else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
        headers[key.toLowerCase()] = value.join(',');
      }
    }
  }
  return PROPAGATOR.extract(base, headers, {
    get: (target, key) => target[key],
    keys: (target) => Object.keys(target),
  });
}

/** Attributes that identify a call, for `execute <tool>` spans and per-call events. */
export function callAttributes(call: {
  session?: string;
  run?: string;
  round?: string;
  callId: string;
  name: string;
}): Attributes {
  return {
    ...(call.session === undefined ? {} : { [ATTR_SESSION]: call.session }),
    ...(call.run === undefined ? {} : { [ATTR_RUN]: call.run }),
    ...(call.round === undefined ? {} : { [ATTR_ROUND]: call.round }),
    [ATTR_CALL_ID]: call.callId,
    [ATTR_GEN_AI_TOOL_CALL_ID]: call.callId,
    [ATTR_GEN_AI_TOOL_NAME]: call.name,
  };
}

/** A call's outcome as far as it is known; `status` is absent for a call pass 1 let through. */
export interface CallOutcome {
  id: string;
  name: string;
  status?: Status;
  error?: Pick<ResultError, 'code' | 'message'>;
  dedupedFrom?: string;
}

function resultAttributes(result: Omit<CallOutcome, 'id' | 'name'>): Attributes {
  return {
    ...(result.status === undefined ? {} : { [ATTR_STATUS]: result.status }),
    ...(result.status === 'deduped' ? { [ATTR_DEDUPE_HIT]: true } : {}),
    ...(result.dedupedFrom === undefined ? {} : { [ATTR_DEDUPED_FROM]: result.dedupedFrom }),
    ...(result.status === 'cached' ? { [ATTR_CACHE_HIT]: true } : {}),
    ...(result.error === undefined ? {} : { [ATTR_ERROR_CODE]: result.error.code }),
  };
}

/**
 * Records a call's outcome on its own span (`execute <tool>`): `td.status`, dedupe/cache hits,
 * and for status `error` the span status ERROR with `error.type` set to the error code.
 */
export function setSpanResult(span: Span, result: Omit<CallOutcome, 'id' | 'name'>): void {
  span.setAttributes(resultAttributes(result));
  if (result.status === 'error') {
    span.setAttribute(ATTR_ERROR_TYPE, result.error?.code ?? 'handler_error');
    span.setStatus({ code: SpanStatusCode.ERROR, ...(result.error ? { message: result.error.message } : {}) });
  }
}

/** `setSpanResult` for an executor's outcome (`{status: 'error', code, message}`), on the worker's execute span. */
export function setSpanOutcome(span: Span, outcome: ExecOutcome): void {
  setSpanResult(
    span,
    outcome.status === 'ok'
      ? { status: 'ok' }
      : { status: 'error', error: { code: outcome.code, message: outcome.message } },
  );
  if (outcome.ranOn !== undefined) span.setAttribute(ATTR_WORKER, outcome.ranOn);
}

/**
 * Adds one `td.call` event per call to a span (`preflight`: what pass 1 decided; `round`: each
 * call's final status), each with the call's id, tool name and status (none for a call pass 1
 * let through), so dedupe and cache hits are visible per call; sets the totals `td.calls`,
 * `td.dedupe.hits`, `td.cache.hits` and `td.stopped` on the span.
 */
export function recordCallEvents(span: Span, results: readonly CallOutcome[]): void {
  let dedupeHits = 0;
  let cacheHits = 0;
  let stopped = 0;
  for (const result of results) {
    if (result.status === 'deduped') dedupeHits++;
    else if (result.status === 'cached') cacheHits++;
    else if (result.status !== undefined && result.status !== 'ok' && result.status !== 'error') stopped++;
    span.addEvent('td.call', {
      [ATTR_CALL_ID]: result.id,
      [ATTR_GEN_AI_TOOL_NAME]: result.name,
      ...resultAttributes(result),
    });
  }
  span.setAttributes({
    [ATTR_CALL_COUNT]: results.length,
    [ATTR_DEDUPE_HITS]: dedupeHits,
    [ATTR_CACHE_HITS]: cacheHits,
    [ATTR_STOPPED]: stopped,
  });
}

export type { Attributes, Context, Span, Tracer };
export { SpanKind, SpanStatusCode };
