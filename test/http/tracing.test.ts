import { initTracing, SPAN_ROUND, SpanKind, type TracingOptions } from '@tool-dispatch/shared/tracing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, putSession, startHarness, tapEvents, uid } from './harness.js';

type Exporter = NonNullable<TracingOptions['exporter']>;
type FinishedSpan = Parameters<Exporter['export']>[0][number];

const finished: FinishedSpan[] = [];
const exporter: Exporter = {
  export(spans, done) {
    finished.push(...spans);
    done({ code: 0 });
  },
  async shutdown() {},
};
const tracing = initTracing('td-http-test', { env: {}, exporter, processor: 'simple' });

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    server: { tracing },
    engine: { hooks: { round: (_info, fn) => tracing.withSpan(SPAN_ROUND, () => fn()) } },
  });
});
afterAll(async () => {
  await h.close();
  await tracing.shutdown();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

describe('request spans', () => {
  it('make the caller’s trace the parent of the request span, and the request span the parent of the round', async () => {
    const s = uid('s');
    await putSession(h, s);
    const r = await h.api(
      'POST',
      `/v1/sessions/${s}/runs/${uid('run')}/rounds`,
      { calls: [{ id: 'f', name: 'find_tools', args: { names: ['calculate'] } }] },
      { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    );
    expect(r.status).toBe(200);
    await tracing.forceFlush();
    const request = finished.find((sp) => sp.name === 'POST /v1/sessions/:session/runs/:run/rounds');
    const round = finished.find((sp) => sp.name === SPAN_ROUND);
    if (!request || !round) throw new Error(`spans: ${finished.map((sp) => sp.name).join(', ')}`);
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.spanContext().traceId).toBe(TRACE_ID);
    expect(request.parentSpanContext?.spanId).toBe(PARENT_ID);
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/sessions/:session/runs/:run/rounds',
      'http.response.status_code': 200,
    });
    expect(round.spanContext().traceId).toBe(TRACE_ID);
    expect(round.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  });

  it('leave probes and the event stream untraced', async () => {
    const s = uid('s');
    await putSession(h, s);
    finished.length = 0;
    await h.api('GET', '/healthz');
    await h.api('GET', '/metrics');
    const tap = await tapEvents(h, s);
    tap.close();
    await tap.ended;
    await tracing.forceFlush();
    expect(finished.map((sp) => sp.name)).toEqual([]);
  });
});
