import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcesses, type Proc } from '../support/cli-procs.js';
import { until } from '../support/until.js';
import { type Deployment, type Planted, plant, removePlanted, session } from './deployment.js';

// API.md v1.3 "MCP servers": a stdio server with "sandbox" runs in the same kind of sandbox (a
// private writable working directory, no workspace, no network, the worker's files and processes
// out of reach) and restarts into a new one when it dies; one without runs as before.

/** A stdio MCP server without the SDK (newline-delimited JSON-RPC): `probe` reports what it reaches, `die` exits. */
const SERVER = `const T = JSON.parse(process.argv[1]);
const fs = require('fs');
let buf = '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) >= 0) { const l = buf.slice(0, i).trim(); buf = buf.slice(i + 1); if (l) handle(JSON.parse(l)); } });
function probe() {
  const r = { cwd: process.cwd() };
  try { r.secret = fs.readFileSync(T.secret, 'utf8'); } catch (e) { r.secret = 'error:' + e.code; }
  try { fs.writeFileSync('w.txt', 'x'); r.cwdWritable = true; } catch (e) { r.cwdWritable = e.code; }
  r.marker = Object.values(process.env).some((v) => String(v).includes(T.marker));
  r.pids = fs.readdirSync('/proc').filter((x) => /^\\d+$/.test(x)).length;
  return r;
}
function handle(m) {
  if (m.id === undefined) return;
  const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'initialize') return ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'p', version: '1' } });
  if (m.method === 'tools/list') return ok({ tools: [{ name: 'probe', inputSchema: { type: 'object' } }, { name: 'die', inputSchema: { type: 'object' } }] });
  if (m.method === 'tools/call' && m.params.name === 'die') process.exit(1);
  if (m.method === 'tools/call') return ok({ content: [{ type: 'text', text: JSON.stringify(probe()) }] });
  send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
}`;

describe('stdio MCP servers with "sandbox"', () => {
  const procs = new CliProcesses();
  let planted: Planted;
  let dev: Proc;
  let d: Deployment;

  beforeAll(async () => {
    planted = plant();
    const targets = JSON.stringify({ secret: planted.secretFile, marker: planted.marker });
    writeFileSync(
      planted.mcpFile,
      JSON.stringify({
        mcpServers: {
          boxed: { command: process.execPath, args: ['-e', SERVER, targets], sandbox: true },
          plain: { command: process.execPath, args: ['-e', SERVER, targets] },
        },
      }),
    );
    const env = {
      TD_API_TOKENS: planted.tokensFile,
      TD_MCP_CONFIG: planted.mcpFile,
      TD_WORKSPACE_ROOT: planted.root,
      TD_SBX_MARKER: planted.marker,
      REDIS_URL: '',
    };
    dev = await procs.start(['dev', '--host', '127.0.0.1'], env, /listening on/);
    d = {
      mode: 'embedded',
      planted,
      port: dev.port,
      runner: dev,
      metricsUrl: '',
      redisUrl: undefined,
      stop: async () => {},
    };
  }, 60_000);
  afterAll(() => {
    procs.killAll('SIGKILL');
    if (planted) removePlanted(planted);
  });

  async function probe(server: string) {
    const a = await session(d, 'a');
    const name = `mcp__${server}__probe`;
    const r = await until(
      async () => {
        const [res] = await a.round([{ id: 'p', name: 'run_tool', args: { name, args: {} } }]);
        return res.status === 'ok' ? res : undefined;
      },
      { timeoutMs: 30_000, what: `${name} answering` },
    );
    return JSON.parse(r.output.content[0].text);
  }

  it("keeps the worker's files, environment and processes from a sandboxed server; its working directory is its own and writable", async () => {
    const plain = await probe('plain');
    expect(plain.secret).toContain(planted.secretText); // unconfined, as before v1.3
    const boxed = await probe('boxed');
    expect(boxed.secret).toMatch(/^error:/);
    expect(boxed.marker).toBe(false);
    expect(boxed.pids).toBeLessThan(5);
    expect(boxed.cwdWritable).toBe(true);
    expect(path.basename(boxed.cwd)).toMatch(/^td-mcp-boxed-/);
  });

  it('restarts a sandboxed server that died into a new sandbox', async () => {
    const before = await probe('boxed');
    const a = await session(d, 'a');
    await a.round([{ id: 'x0', name: 'run_tool', args: { name: 'mcp__boxed__die', args: {} } }]); // its schema
    const [died] = await a.round([{ id: 'x', name: 'run_tool', args: { name: 'mcp__boxed__die', args: {} } }]);
    expect(died.status, JSON.stringify(died)).toBe('error');
    const after = await probe('boxed');
    expect(after.cwd).not.toBe(before.cwd);
    expect(after.cwdWritable).toBe(true);
  });
});
