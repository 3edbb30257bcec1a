// The `@tool-dispatch/shared/tracing` door (see package.json exports): OpenTelemetry set-up
// (provider, config), span names and attributes (names), spans (spans) and W3C propagation.

export type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
export { SpanKind, SpanStatusCode } from '@opentelemetry/api';
export type { OtlpProtocol, TracingConfig } from './config.js';
export { resolveTracingConfig } from './config.js';
export * from './names.js';
export type { TraceCarrier } from './propagation.js';
export { extractContext, injectContext } from './propagation.js';
export type { Tracing, TracingOptions } from './provider.js';
export { globalTracing, initTracing } from './provider.js';
export type { CallOutcome, SpanSpec } from './spans.js';
export {
  callAttributes,
  recordCallEvents,
  recordSpan,
  setSpanOutcome,
  setSpanResult,
  withSpan,
} from './spans.js';
