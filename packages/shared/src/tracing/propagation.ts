// W3C trace context (and baggage) across processes: job payloads and HTTP headers.
import { type Context, context, ROOT_CONTEXT, type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';

/** W3C trace context (traceparent, tracestate) and baggage, used for job payloads and HTTP headers. */
export const PROPAGATOR: TextMapPropagator = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

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
