// A lone quiet tools/call through /mcp (no elicitation, no progress, no task) is answered without
// the SDK's server (http/mcp/mcp-quiet-call.ts); the same call in a batch of one still goes
// through the SDK, which answers a batch of one with one object. Both answers are compared here,
// byte for byte where nothing differs by nature (the round's ids and time), for results and errors.
import { describe, expect, it } from 'vitest';
import { uid } from './api.js';
import { useService } from './fixture.js';

const HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

describe('a quiet tools/call through /mcp', () => {
  const f = useService('embedded');

  /** A 2025-11-25 MCP session (initialize, initialized): its id. */
  async function mcpSession(): Promise<string> {
    const init = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'parity', version: '1' } },
    };
    const r = await fetch(`${f.service.base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify(init) });
    const id = r.headers.get('mcp-session-id') as string;
    expect(r.status, await r.text()).toBe(200);
    const h = { ...HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
    const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
    expect(
      (await fetch(`${f.service.base}/mcp`, { method: 'POST', headers: h, body: JSON.stringify(note) })).status,
    ).toBe(202);
    return id;
  }

  /** POSTs one tools/call alone (`batch` false) or as a batch of one; status, type and body. */
  async function post(mcp: string, params: Record<string, unknown>, id: number, batch: boolean) {
    const message = { jsonrpc: '2.0', id, method: 'tools/call', params };
    const r = await fetch(`${f.service.base}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': mcp, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify(batch ? [message] : message),
    });
    return { status: r.status, type: r.headers.get('content-type'), body: (await r.json()) as Record<string, unknown> };
  }

  /** The answer without what differs between two calls by nature: the round's ids and its time. */
  const comparable = (a: Awaited<ReturnType<typeof post>>) => {
    const result = a.body.result as { _meta?: Record<string, Record<string, unknown>> } | undefined;
    const meta = result?._meta?.['tool-dispatch/result'];
    if (meta) for (const k of ['id', 'round', 'durationMs']) delete meta[k];
    return a;
  };

  it.each([
    ['an ok result', { name: 'calculate', arguments: { expression: '6*7' } }],
    ['an error result (a failing call)', { name: 'calculate', arguments: { expression: '1/' } }],
    ['an unknown tool', { name: 'no_such_tool', arguments: {} }],
  ])('answers %s as the SDK does', async (_what, params) => {
    const mcp = await mcpSession();
    const alone = await post(mcp, { ...params, _meta: { 'tool-dispatch/run': uid('run') } }, 1, false);
    const viaSdk = await post(mcp, { ...params, _meta: { 'tool-dispatch/run': uid('run') } }, 1, true);
    expect(alone.status).toBe(200);
    expect(comparable(alone)).toEqual(comparable(viaSdk));
  });

  it('answers a protocol error (an idempotency key used for another call) as the SDK does', async () => {
    const mcp = await mcpSession();
    const run = uid('run');
    const meta = { 'tool-dispatch/run': run, 'tool-dispatch/idempotencyKey': 'k-1' };
    const first = await post(mcp, { name: 'calculate', arguments: { expression: '1+1' }, _meta: meta }, 1, false);
    expect(first.body.result).toBeDefined();
    const other = { name: 'calculate', arguments: { expression: '2+2' }, _meta: meta };
    const alone = await post(mcp, other, 2, false);
    const viaSdk = await post(mcp, other, 2, true);
    expect(alone.body.error).toMatchObject({ code: -32602 });
    expect(alone).toEqual(viaSdk);
  });
});
