// `tool-dispatch mcp` (API.md "MCP server"): the MCP server over stdio, launched by the official
// SDK client as an MCP client launches a local server; embedded.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, expect, it } from 'vitest';
import { REPO_ROOT } from './conformance/service.js';
import { CliProcesses } from './support/cli-procs.js';
import { randomPrefix, startRedis } from './support/redis.js';

const BIN = path.join(REPO_ROOT, 'bin', 'tool-dispatch');
const root = mkdtempSync(path.join(tmpdir(), 'td-mcp-stdio-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function env(): Record<string, string> {
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('TD_') && !k.startsWith('REDIS_')) e[k] = v;
  return { ...e, TD_WORKSPACE_ROOT: root };
}

it('says what it does in --help', () => {
  const help = execFileSync(BIN, ['mcp', '--help'], { encoding: 'utf8' });
  expect(help).toMatch(/MCP over stdio/);
  expect(help).toMatch(/--session <id>/);
});

it('serves tools/list and tools/call over stdio, asking the confirm gate of the client', async () => {
  const asked: string[] = [];
  const client = new Client({ name: 'stdio-test', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(String(req.params.message));
    return { action: 'decline' };
  });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['mcp'], env: env(), stderr: 'ignore' }));
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('calculate');
    expect(names).not.toContain('run_tool');
    const r = await client.callTool({ name: 'calculate', arguments: { expression: '7*6' } });
    expect(r.structuredContent).toEqual({ value: 42 });
    const denied = await client.callTool({ name: 'run_command', arguments: { command: 'echo no > no.txt' } });
    expect(denied.isError).toBe(true);
    expect(denied._meta?.['tool-dispatch/result']).toMatchObject({ status: 'denied' });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('run_command');
    expect(existsSync(path.join(root, 'default'))).toBe(true);
  } finally {
    await client.close();
  }
});

it('serves as a coordinator of the deployment when REDIS_URL is set: the deployment’s worker runs the call', async () => {
  const redis = await startRedis();
  const cli = new CliProcesses();
  const deployment = { REDIS_URL: redis.url, TD_PREFIX: randomPrefix('tdmcp'), TD_WORKSPACE_ROOT: root };
  const client = new Client({ name: 'stdio-distributed', version: '1' });
  try {
    await cli.start(['worker'], { ...deployment, PORT: '0' }, /consuming/);
    await client.connect(
      new StdioClientTransport({ command: BIN, args: ['mcp'], env: { ...env(), ...deployment }, stderr: 'ignore' }),
    );
    const r = await client.callTool({ name: 'calculate', arguments: { expression: '5*5' } });
    expect(r.structuredContent).toEqual({ value: 25 });
    expect(r._meta?.['tool-dispatch/result']).toMatchObject({ status: 'ok' });
  } finally {
    await client.close();
    cli.killAll('SIGKILL');
    await redis.stop();
  }
}, 120_000);
