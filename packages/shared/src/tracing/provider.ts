// The tracer provider: OTLP export, the context manager, the process's global tracing.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { context, ProxyTracerProvider, propagation, type Span, type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
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
import { resolveTracingConfig, type TracingConfig } from './config.js';
import { ATTR_SERVICE_NAME, TRACER_NAME } from './names.js';
import { PROPAGATOR } from './propagation.js';
import { type SpanSpec, withSpan } from './spans.js';

export interface TracingOptions {
  /** Defaults to process.env. Headers, compression and timeout are read by the exporter from process.env. */
  env?: NodeJS.ProcessEnv;
  /** Export here instead of OTLP (tests: InMemorySpanExporter); tracing is then on whatever the env says. */
  exporter?: SpanExporter;
  /** `batch` (default) queues spans and sends them in the background; `simple` exports each span as it ends. */
  processor?: 'batch' | 'simple';
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

const NOOP_PROVIDER = new ProxyTracerProvider();

let contextManagerInstalled = false;
/** The Tracing that registered itself as the global tracer provider, if any. */
let globalOwner: Tracing | undefined;

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

/** The process's tracing, once `initTracing` enabled it (workers' execute spans use it), else undefined. */
export function globalTracing(): Tracing | undefined {
  return globalOwner;
}
