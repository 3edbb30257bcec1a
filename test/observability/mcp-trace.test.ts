// The MCP server's traces and metrics (API.md "MCP server", issue 26): an MCP request's round is
// one trace, the MCP session and method as attributes; td_mcp_* on /metrics. Real `dev` process
// exporting OTLP/HTTP to a receiver in this test, driven by the official SDK client.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useService } from '../conformance/fixture.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';

let receiver: OtlpReceiver | undefined;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver?.close();
});
const f = useService('embedded', {
  envFor: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver?.url, OTEL_BSP_SCHEDULE_DELAY: '200' }),
});

it('makes a tools/call one trace: POST /mcp, then tools/call <tool> with the MCP session and method, then the round', async () => {
  const client = new Client({ name: 'trace-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${f.service.base}/mcp`));
  await client.connect(transport);
  const sid = transport.sessionId as string;
  const r = await client.callTool({ name: 'calculate', arguments: { expression: '2*21' } });
  const round = (r._meta?.['tool-dispatch/result'] as { round?: string } | undefined)?.round;
  await client.close();
  const spans = await (receiver as OtlpReceiver).waitFor(
    (all) => all.some((s) => s.name === 'round' && s.attributes['td.round'] === round),
    30_000,
  );
  const roundSpan = spans.find((s) => s.name === 'round' && s.attributes['td.round'] === round);
  const trace = spans.filter((s) => s.traceId === roundSpan?.traceId);
  const call = trace.find((s) => s.name === 'tools/call calculate');
  expect(call?.attributes).toMatchObject({
    'mcp.session.id': sid,
    'mcp.method.name': 'tools/call',
    'td.session': `mcp-${sid}`,
    'gen_ai.tool.name': 'calculate',
  });
  expect(roundSpan?.parentSpanId).toBe(call?.spanId);
  const server = trace.find((s) => s.spanId === call?.parentSpanId);
  expect(server).toMatchObject({ name: 'POST /mcp', kind: 'server' });
  expect(server?.parentSpanId).toBeUndefined();
});

it('counts MCP requests by method and the MCP sessions open on /metrics', async () => {
  const client = new Client({ name: 'metrics-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${f.service.base}/mcp`));
  await client.connect(transport);
  await client.listTools();
  const before = await (await fetch(`${f.service.base}/metrics`)).text();
  const value = (text: string, series: string) =>
    Number(new RegExp(`^${series.replace(/[{}"/]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  expect(value(before, 'td_mcp_requests_total{method="tools/list"}')).toBeGreaterThanOrEqual(1);
  expect(value(before, 'td_mcp_requests_total{method="initialize"}')).toBeGreaterThanOrEqual(1);
  const open = value(before, 'td_mcp_sessions_open');
  expect(open).toBeGreaterThanOrEqual(1);
  await transport.terminateSession();
  await client.close();
  const after = await (await fetch(`${f.service.base}/metrics`)).text();
  expect(value(after, 'td_mcp_sessions_open')).toBe(open - 1);
  expect(value(after, 'td_mcp_requests_total{method="DELETE"}')).toBeGreaterThanOrEqual(1);
});
