// Starting spans, and a call's attributes, result and events on them.
import {
  type Attributes,
  type Context,
  context,
  type Link,
  type Span,
  type SpanKind,
  SpanStatusCode,
  type Tracer,
} from '@opentelemetry/api';
import type { ExecOutcome } from '../execution.js';
import type { ResultError, Status } from '../result.js';
import {
  ATTR_CACHE_HIT,
  ATTR_CACHE_HITS,
  ATTR_CALL_COUNT,
  ATTR_CALL_ID,
  ATTR_DEDUPE_HIT,
  ATTR_DEDUPE_HITS,
  ATTR_DEDUPED_FROM,
  ATTR_ERROR_CODE,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_ROUND,
  ATTR_RUN,
  ATTR_SESSION,
  ATTR_STATUS,
  ATTR_STOPPED,
  ATTR_WORKER,
} from './names.js';

/** A span to start: a name alone, or with attributes, kind, an explicit parent context and links. */
export interface SpanSpec {
  name: string;
  attributes?: Attributes;
  kind?: SpanKind;
  /** Parent context; defaults to the active one. Use `extractContext(job.trace)` on a worker. */
  parent?: Context;
  links?: Link[];
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

/** Attributes that identify a call, for `execute <tool>` spans and per-call events. */
export function callAttributes(call: {
  session?: string;
  run?: string;
  round?: string;
  /** The model's id for the call (ExecJob.toolCallId). */
  toolCallId: string;
  name: string;
}): Attributes {
  return {
    ...(call.session === undefined ? {} : { [ATTR_SESSION]: call.session }),
    ...(call.run === undefined ? {} : { [ATTR_RUN]: call.run }),
    ...(call.round === undefined ? {} : { [ATTR_ROUND]: call.round }),
    [ATTR_CALL_ID]: call.toolCallId,
    [ATTR_GEN_AI_TOOL_CALL_ID]: call.toolCallId,
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
