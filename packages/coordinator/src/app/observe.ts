import type { CallResult } from '@tool-dispatch/shared';
import {
  ATTR_CALL_COUNT,
  ATTR_CALL_ID,
  ATTR_CONFIRM_DECISION,
  ATTR_CONFIRMATIONS,
  ATTR_FIND_TOOLS_FOUND,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD,
  ATTR_MCP_SESSION,
  ATTR_QUEUE_CLASS,
  ATTR_ROUND,
  ATTR_RUN,
  ATTR_SESSION,
  ATTR_WAIT_LIMIT,
  ATTR_WAIT_REASON,
  ATTR_WORKER,
  type CallOutcome,
  callAttributes,
  executeSpanName,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  injectContext,
  recordCallEvents,
  recordSpan,
  SPAN_ADMISSION_WAIT,
  SPAN_COMMIT,
  SPAN_CONFIRM_WAIT,
  SPAN_FIND_TOOLS,
  SPAN_PREFLIGHT,
  SPAN_ROUND,
  SpanKind,
  setSpanResult,
  type Tracing,
} from '@tool-dispatch/shared/tracing';
import type { EngineHooks } from '../engine.js';
import type { McpHooks } from '../http/mcp/mcp-service.js';
import type { PlannedCall, RoundRef } from '../model.js';
import type { CoordinatorMetrics } from './metrics.js';

/** What pass 1 decided for each call, for the preflight span's per-call events. */
function preflightOutcomes(planned: readonly PlannedCall[]): CallOutcome[] {
  return planned.map((p) => {
    const d = p.decision;
    if (d.kind === 'done') {
      const r = d.result;
      return {
        id: r.id,
        name: r.name,
        status: r.status,
        ...(r.error ? { error: r.error } : {}),
        ...(r.dedupedFrom ? { dedupedFrom: r.dedupedFrom } : {}),
      };
    }
    if (d.kind === 'follow') return { id: p.call.id, name: p.name, status: 'deduped' };
    return { id: p.call.id, name: p.name };
  });
}

/** A round's results, for the round span's per-call events. */
function finalOutcomes(results: readonly CallResult[]): CallOutcome[] {
  return results.map((r) => ({
    id: r.id,
    name: r.name,
    status: r.status,
    ...(r.error ? { error: r.error } : {}),
    ...(r.dedupedFrom ? { dedupedFrom: r.dedupedFrom } : {}),
  }));
}

const idsOf = (i: { session: string; run: string; round: string }) => ({
  [ATTR_SESSION]: i.session,
  [ATTR_RUN]: i.run,
  [ATTR_ROUND]: i.round,
});

/**
 * The spans of what a round waited on and what pass 1 answered itself: `confirm wait` (the gate,
 * one `td.call` event per confirmation with its decision), `admission wait` (a call held back by
 * the round's order or the run's limits, `td.wait.reason`), `find_tools` (child of `preflight`).
 */
function waitHooks(tracing: Tracing): Pick<EngineHooks, 'confirmWait' | 'waited' | 'findTools'> {
  return {
    confirmWait: (info, wait) =>
      tracing.withSpan(
        {
          name: SPAN_CONFIRM_WAIT,
          attributes: { ...idsOf(info), [ATTR_CONFIRMATIONS]: info.asked.length, [ATTR_WAIT_REASON]: 'confirm' },
        },
        async function confirmWaitSpan(span) {
          const decisions = await wait();
          info.asked.forEach((asked, i) => {
            const d = decisions[i];
            span.addEvent('td.call', {
              [ATTR_CALL_ID]: asked.callId,
              [ATTR_GEN_AI_TOOL_NAME]: asked.name,
              [ATTR_CONFIRM_DECISION]: d?.approve ? 'approved' : (d?.by ?? 'unknown'),
            });
          });
          return decisions;
        },
      ),
    waited: (call, wait) =>
      recordSpan(tracing.tracer, {
        name: SPAN_ADMISSION_WAIT,
        startTimeMs: wait.startMs,
        endTimeMs: wait.endMs,
        attributes: {
          ...callAttributes({ toolCallId: call.call.id, name: call.name }),
          [ATTR_WAIT_REASON]: wait.reason,
          ...(wait.limit ? { [ATTR_WAIT_LIMIT]: wait.limit } : {}),
          [ATTR_QUEUE_CLASS]: call.spec?.concurrency === 'concurrent' ? 'concurrent' : 'serial',
        },
      }),
    findTools: (call, answer) =>
      tracing.tracer.startActiveSpan(
        SPAN_FIND_TOOLS,
        { attributes: callAttributes({ toolCallId: call.call.id, name: call.name }) },
        function findToolsSpan(span) {
          try {
            const out = answer();
            span.setAttribute(ATTR_FIND_TOOLS_FOUND, out.tools.length);
            return out;
          } finally {
            span.end();
          }
        },
      ),
  };
}

/**
 * The `execute <tool>` span of a call the coordinator answered itself (find_tools, file_history,
 * error_history): DESIGN.md gives every executed call one, with the attributes a worker's carries
 * (the ids, gen_ai.*, the queue class, td.status, td.worker `coordinator`), as a child of the round.
 */
function answeredSpan(tracing: Tracing, call: PlannedCall, ref: RoundRef, result: CallResult): void {
  const span = tracing.tracer.startSpan(executeSpanName(call.name), {
    kind: SpanKind.INTERNAL,
    attributes: {
      ...callAttributes({ ...ref, toolCallId: call.call.id, name: call.name }),
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
      [ATTR_QUEUE_CLASS]: call.spec?.concurrency === 'concurrent' ? 'concurrent' : 'serial',
    },
  });
  setSpanResult(span, result.error ? { status: result.status, error: result.error } : { status: result.status });
  if (result.ranOn !== undefined) span.setAttribute(ATTR_WORKER, result.ranOn);
  span.end();
}

/** Engine hooks that make one trace per round (DESIGN.md) and keep the coordinator's metrics. */
export function observabilityHooks(tracing: Tracing | undefined, metrics: CoordinatorMetrics | undefined): EngineHooks {
  const ids = idsOf;
  const hooks: EngineHooks = {};
  if (tracing?.enabled) {
    Object.assign(hooks, waitHooks(tracing));
    hooks.round = (info, fn) =>
      tracing.withSpan(
        { name: SPAN_ROUND, attributes: { ...ids(info), [ATTR_CALL_COUNT]: info.calls } },
        async function roundSpan(span) {
          const out = await fn();
          // Every call's final status (after the gate and execution), one event each.
          const results = (out as { results?: unknown } | undefined)?.results;
          if (Array.isArray(results)) recordCallEvents(span, finalOutcomes(results as CallResult[]));
          return out;
        },
      );
    hooks.pass = (name, info, fn) =>
      tracing.withSpan(
        { name: name === 'preflight' ? SPAN_PREFLIGHT : SPAN_COMMIT, attributes: ids(info) },
        async (span) => {
          const out = await fn();
          if (name === 'preflight' && Array.isArray(out))
            recordCallEvents(span, preflightOutcomes(out as PlannedCall[]));
          return out;
        },
      );
    hooks.answered = (call, ref, result) => answeredSpan(tracing, call, ref, result);
    // The job carries the round's context, so the worker's `execute <tool>` span is its child.
    hooks.execute = (_call, job, run) => {
      job.trace = injectContext();
      return run();
    };
  }
  if (metrics) {
    hooks.result = (result, planned, ref) => {
      metrics.recordCall(result);
      metrics.recordSearch(result, planned.args, ref);
    };
    hooks.roundsInProgress = (n) => metrics.setRoundsInProgress(n);
    hooks.roundsWaiting = (n) => metrics.setRoundsWaiting(n);
    hooks.confirmations = (delta) => {
      if (delta > 0) for (let i = 0; i < delta; i++) metrics.confirmationRequested();
      else for (let i = 0; i < -delta; i++) metrics.confirmationSettled();
    };
    hooks.inputs = (delta) => metrics.inputsWaiting(delta);
    hooks.grants = (event) => metrics.grantEvent(event);
    const spans = hooks.waited;
    hooks.waited = (call, wait) => {
      spans?.(call, wait);
      if (wait.reason === 'named_limit' && wait.limit)
        metrics.limitWaited(wait.limit, Math.max(0, wait.endMs - wait.startMs) / 1000);
    };
    hooks.limitRejected = (_call, limit) => metrics.limitRejected(limit);
    hooks.limitWaiting = (limit, delta) => metrics.limitWaiting(limit, delta);
  }
  return hooks;
}

/**
 * The MCP server's hooks: a tools/call is a span (`tools/call <tool>`, the MCP session and method
 * as attributes) whose child is the round's span, so an MCP request's round is one trace; the
 * MCP metrics (td_mcp_sessions_open, td_mcp_requests_total).
 */
export function mcpHooks(tracing: Tracing | undefined, metrics: CoordinatorMetrics | undefined): McpHooks {
  const hooks: McpHooks = {};
  if (tracing?.enabled)
    hooks.call = (info, fn) =>
      tracing.withSpan(
        {
          name: `${info.method} ${info.tool}`,
          attributes: {
            [ATTR_MCP_SESSION]: info.mcpSession,
            [ATTR_MCP_METHOD]: info.method,
            [ATTR_SESSION]: info.session,
            [ATTR_GEN_AI_TOOL_NAME]: info.tool,
          },
        },
        () => fn(),
      );
  if (metrics) {
    hooks.request = (method) => metrics.mcpRequest(method);
    hooks.sessions = (delta) => metrics.mcpSessions(delta);
  }
  return hooks;
}
