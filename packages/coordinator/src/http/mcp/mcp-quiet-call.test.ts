import { describe, expect, it } from 'vitest';
import { isQuietCall } from './mcp-quiet-call.js';
import type { McpSessionRecord } from './mcp-sessions.js';

// Which tools/call requests skip the SDK's server (the rest go to it, which answers or refuses them
// itself); that both ways answer alike is test/conformance/mcp-quiet-call.test.ts.
const record = (elicitation = false): McpSessionRecord => ({
  id: 'm-1',
  session: 's-1',
  elicitation,
  protocolVersion: '2025-11-25',
  createdAt: 0,
});
const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const call = (params: Record<string, unknown> = { name: 'calculate', arguments: { expression: '1+1' } }) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params,
});

describe('isQuietCall', () => {
  it('takes a lone tools/call of a session without questions, with the headers the transport wants', () => {
    expect(isQuietCall(record(), headers, call())).toBe(true);
    expect(isQuietCall(record(), { ...headers, 'mcp-protocol-version': '2025-11-25' }, call())).toBe(true);
    expect(isQuietCall(record(), headers, call({ name: 'calculate', _meta: { 'tool-dispatch/run': 'r' } }))).toBe(true);
  });

  it.each([
    ['a batch', record(), headers, [call()]],
    ['another method', record(), headers, { ...call(), method: 'tools/list' }],
    ['a notification (no id)', record(), headers, { jsonrpc: '2.0', method: 'tools/call', params: { name: 'x' } }],
    ['a session that takes elicitations', record(true), headers, call()],
    ['a progress token', record(), headers, call({ name: 'calculate', _meta: { progressToken: 1 } })],
    ['a task', record(), headers, call({ name: 'calculate', task: { ttl: 1000 } })],
    ['no name', record(), headers, call({ arguments: {} })],
    ['arguments that are no object', record(), headers, call({ name: 'calculate', arguments: [1] })],
    ['an Accept without text/event-stream (406)', record(), { ...headers, accept: 'application/json' }, call()],
    ['a body that is not JSON by its type (415)', record(), { ...headers, 'content-type': 'text/plain' }, call()],
    ['an unsupported protocol version (400)', record(), { ...headers, 'mcp-protocol-version': '1999-01-01' }, call()],
  ])('leaves %s to the SDK', (_what, r, h, body) => {
    expect(isQuietCall(r, h, body)).toBe(false);
  });
});
