// `tool-dispatch mcp` on MCP protocol 2026-07-28 (API.md v1.3): the SDK v2 client pinned to
// 2026-07-28 launches it as a local server; no initialize, each request with its `_meta`
// envelope; the confirm gate comes back as input_required and the retry resumes the round.
// Embedded, and as a coordinator of a deployment (REDIS_URL) whose worker runs the calls.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, expect, it } from 'vitest';
import { CliProcesses } from '../support/cli-procs.js';
import { randomPrefix, startRedis } from '../support/redis.js';
import { REPO_ROOT } from './service.js';

const BIN = path.join(REPO_ROOT, 'bin', 'tool-dispatch');
const root = mkdtempSync(path.join(tmpdir(), 'td-mcp26-stdio-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const RESULT = 'tool-dispatch/result';

function env(extra: Record<string, string> = {}): Record<string, string> {
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('TD_') && !k.startsWith('REDIS_')) e[k] = v;
  return { ...e, TD_WORKSPACE_ROOT: root, ...extra };
}

/** A 2026-07-28 client of `tool-dispatch mcp`, answering approvals with `approve`; the messages it was asked. */
async function connect(extra: Record<string, string>, approve: () => boolean) {
  const asked: string[] = [];
  const client = new Client(
    { name: 'stdio-2026', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(String(req.params.message));
    return { action: 'accept', content: { approve: approve() } };
  });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['mcp'], env: env(extra), stderr: 'ignore' }));
  return { client, asked };
}

async function exercise(extra: Record<string, string>) {
  let approve = true;
  const { client, asked } = await connect(extra, () => approve);
  try {
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    // Tasks are /mcp's only (docs/mcp-server.md): over stdio the extension is not declared.
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect(JSON.stringify(client.getServerCapabilities())).not.toContain('io.modelcontextprotocol/tasks');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('calculate');
    const r = await client.callTool({ name: 'calculate', arguments: { expression: '7*6' } });
    expect(r.structuredContent).toEqual({ value: 42 });
    const again = await client.callTool({ name: 'calculate', arguments: { expression: '7*6' } });
    expect(again._meta?.[RESULT]).toMatchObject({ status: 'deduped' });
    const yes = await client.callTool({ name: 'run_command', arguments: { command: 'echo stdio-yes' } });
    expect(yes._meta?.[RESULT], JSON.stringify(yes)).toMatchObject({ status: 'ok' });
    expect(JSON.stringify(yes.content)).toContain('stdio-yes');
    approve = false;
    const no = await client.callTool({ name: 'run_command', arguments: { command: 'echo stdio-no' } });
    expect(no.isError).toBe(true);
    expect(no._meta?.[RESULT]).toMatchObject({ status: 'denied' });
    expect(asked).toHaveLength(2);
    expect(asked[0]).toContain('stdio-yes');
  } finally {
    await client.close();
  }
}

it('serves 2026-07-28 over stdio, embedded: tools/list, tools/call in the current run, input_required approvals', async () => {
  await exercise({});
}, 60_000);

it('serves 2026-07-28 over stdio as a coordinator of the deployment (REDIS_URL)', async () => {
  const redis = await startRedis();
  const cli = new CliProcesses();
  const deployment = { REDIS_URL: redis.url, TD_PREFIX: randomPrefix('tdmcp26'), TD_WORKSPACE_ROOT: root };
  try {
    await cli.start(['worker'], { ...deployment, PORT: '0' }, /consuming/);
    await exercise(deployment);
  } finally {
    cli.killAll('SIGKILL');
    await redis.stop();
  }
}, 120_000);

it('checks TD_MCP_RUN_IDLE_MS before anything starts: a bad value exits 2 naming it; --help says it', () => {
  for (const args of [['mcp'], ['dev', '--port', '0']]) {
    const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 120_000, env: env({ TD_MCP_RUN_IDLE_MS: 'soon' }) });
    expect(r.status, `${args[0]}: ${r.stderr}`).toBe(2);
    expect(r.stderr).toMatch(/TD_MCP_RUN_IDLE_MS must be a positive integer, got "soon"/);
  }
  const help = spawnSync(BIN, ['--help'], { encoding: 'utf8', timeout: 120_000, env: env() });
  expect(help.stdout).toMatch(/TD_MCP_RUN_IDLE_MS .*mcp-<n>/);
}, 400_000);
