// The edges of /mcp (API.md "MCP server"): the bearer token as for /v1, the transport's own
// refusals (no session, unknown session, a body that is no JSON-RPC), over a real server in-process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { buildServer, createEngine, McpService, MemoryMcpSessions } from '@tool-dispatch/coordinator';
import { resolveConfig } from '@tool-dispatch/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'mcp-edge-token-0123456789';
let base = '';
let close: () => Promise<void> = async () => {};

beforeAll(async () => {
  const workspaceRoot = await mkdtemp(path.join(tmpdir(), 'td-mcp-edge-'));
  const engine = await createEngine({ config: resolveConfig({ workspaceRoot }, {}) });
  const mcp = new McpService({ dispatcher: engine, sessions: new MemoryMcpSessions(), version: 'test' });
  await mcp.start();
  const app = await buildServer({ dispatcher: engine, apiToken: TOKEN, mcp });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  close = async () => {
    await app.close();
    await engine.close();
    await rm(workspaceRoot, { recursive: true, force: true });
  };
});
afterAll(() => close());

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'edge', version: '1' } },
};
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });

describe('/mcp behind TD_API_TOKEN', () => {
  it('refuses a request without the bearer token (401 in the error shape) and serves the SDK client with it', async () => {
    const r = await post(INIT, { authorization: '' });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer');
    expect(await r.json()).toMatchObject({ error: { code: 'unauthorized' } });
    const client = new Client({ name: 'edge', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    });
    await client.connect(transport);
    const r2 = await client.callTool({ name: 'calculate', arguments: { expression: '2+2' } });
    expect(r2.structuredContent).toEqual({ value: 4 });
    await client.close();
  });
});

describe('the transport’s refusals', () => {
  it('answers 400 to a request without Mcp-Session-Id and 404 to an unknown one (JSON-RPC errors)', async () => {
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const none = await post(list);
    expect(none.status).toBe(400);
    expect(await none.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    const unknown = await post(list, { 'mcp-session-id': 'no-such-mcp-session' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
    const del = await fetch(`${base}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': 'no-such-mcp-session' },
    });
    expect(del.status).toBe(404);
  });

  it('answers 400 to a body that is no JSON-RPC message, and a bad ?session= id 400 in the error shape', async () => {
    const r = await post([1, 2]);
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: { code: -32700 } });
    const bad = await fetch(`${base}/mcp?session=${encodeURIComponent('a b')}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${TOKEN}`,
      },
      body: JSON.stringify(INIT),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });

  it('answers 202 to notifications and the GET stream 406 without Accept: text/event-stream', async () => {
    const init = await post(INIT);
    const sid = init.headers.get('mcp-session-id') as string;
    await init.text();
    const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid });
    expect(n.status).toBe(202);
    const g = await fetch(`${base}/mcp`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': sid, accept: 'application/json' },
    });
    expect(g.status).toBe(406);
  });
});
