// tool-dispatch as an MCP server (issue 26): what `/mcp` costs a client, in one run of real processes.
// - `calculate` called through `/mcp` (the official SDK client, `tools/call`) against the same call
//   through the round API (`POST .../rounds`, the typed client), both on one `bin/tool-dispatch dev`;
// - server-everything's `echo` (Streamable HTTP, its own process) called through tool-dispatch's
//   `/mcp` (client → /mcp → McpHub → server-everything) against the same client calling
//   server-everything directly: what a client pays for putting the dispatcher in between.
// Each call is in a new run (no dedupe) with its own args (no cache), sequential, one client per
// side; the sides alternate in slices so that drift of the machine's load hits both alike.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { TdClient } from '@tool-dispatch/client';
import { mcpToolName } from '@tool-dispatch/shared';
import { BIN, type Child, startChild, stopChild } from './http-procs.js';

export interface McpServerFigures {
  calls: number;
  /** µs per `calculate` through /mcp, and through the round API. */
  calcMcpUs: number;
  calcRoundUs: number;
  /** µs per `calculate` through /mcp on protocol 2026-07-28 (stateless, the run from `_meta`), and through the round API. */
  calc26McpUs: number;
  calc26RoundUs: number;
  /** µs per upstream echo through tool-dispatch's /mcp, and straight to the upstream. */
  echoMcpUs: number;
  echoDirectUs: number;
}

const SLICES = 4;

/** A loopback port that was free a moment ago (server-everything takes its port from PORT). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
const WARM = 50;

const everythingBin = () => {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@modelcontextprotocol/server-everything/package.json');
  return path.join(path.dirname(pkg), 'dist', 'index.js');
};

async function mcpClient(url: string, revision?: '2026-07-28'): Promise<Client> {
  const client = new Client(
    { name: 'bench-mcp-server', version: '1' },
    revision ? { versionNegotiation: { mode: { pin: revision } } } : {},
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** Runs `call(i)` for i in [from, to) one after another; µs spent. */
async function timed(from: number, to: number, call: (i: number) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  for (let i = from; i < to; i++) await call(i);
  return (performance.now() - t0) * 1000;
}

/** The two sides alternating in SLICES slices after WARM calls each; µs per call of each. */
async function compare(
  calls: number,
  a: (i: number) => Promise<void>,
  b: (i: number) => Promise<void>,
): Promise<[number, number]> {
  await timed(-WARM, 0, a);
  await timed(-WARM, 0, b);
  let [ta, tb] = [0, 0];
  const per = Math.ceil(calls / SLICES);
  for (let s = 0; s < SLICES; s++) {
    ta += await timed(s * per, (s + 1) * per, a);
    tb += await timed(s * per, (s + 1) * per, b);
  }
  return [ta / (per * SLICES), tb / (per * SLICES)];
}

function expectOk(what: string, r: { isError?: unknown; _meta?: Record<string, unknown> | undefined }): void {
  const status = (r._meta?.['tool-dispatch/result'] as { status?: string } | undefined)?.status;
  if (r.isError || (status !== undefined && status !== 'ok'))
    throw new Error(`${what} did not succeed: ${JSON.stringify(r).slice(0, 500)}`);
}

// long: one run's story — the upstream and dev started, four clients, two comparisons, and everything stopped.
export async function benchMcpServer(calls: number, progress: (s: string) => void): Promise<McpServerFigures> {
  const tmp = mkdtempSync(path.join(tmpdir(), 'td-bench-mcp-server-'));
  const procs: Child[] = [];
  const clients: Client[] = [];
  try {
    const upstreamPort = await freePort();
    procs.push(
      await startChild({
        label: 'server-everything',
        command: process.execPath,
        args: [everythingBin(), 'streamableHttp'],
        env: { PORT: String(upstreamPort), HOME: tmp },
        ready: /listening on port/i,
      }),
    );
    const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
    const config = path.join(tmp, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { everything: { type: 'http', url: upstream } } }));
    const devPort = await freePort();
    const dev = await startChild({
      label: 'dev',
      command: BIN,
      args: ['dev', '--port', String(devPort), '--host', '127.0.0.1'],
      env: {
        TD_WORKSPACE_ROOT: path.join(tmp, 'ws'),
        TD_MCP_CONFIG: config,
        TD_API_TOKEN: undefined,
        REDIS_URL: undefined,
      },
      ready: /listening on http/,
    });
    procs.push(dev);
    const base = `http://127.0.0.1:${devPort}`;
    const td = new TdClient({ baseUrl: base });
    await td.putSession('bench-round', { provider: 'mcp' });
    const viaMcp = await mcpClient(`${base}/mcp`);
    const direct = await mcpClient(upstream);
    const viaMcp26 = await mcpClient(`${base}/mcp`, '2026-07-28');
    clients.push(viaMcp, direct, viaMcp26);
    const ECHO = mcpToolName('everything', 'echo');

    progress(`mcp-server: ${calls} calculate calls through /mcp and through the round API, alternating`);
    const [calcMcpUs, calcRoundUs] = await compare(
      calls,
      async (i) => {
        const r = await viaMcp.callTool({
          name: 'calculate',
          arguments: { expression: `${i}*7` },
          _meta: { 'tool-dispatch/run': `calc-mcp-${i + WARM}` },
        });
        expectOk('calculate through /mcp', r);
      },
      async (i) => {
        const { results } = await td.submitRound('bench-round', `calc-round-${i + WARM}`, [
          { id: 'c', name: 'calculate', args: { expression: `${i}*7` } },
        ]);
        if (results[0]?.status !== 'ok') throw new Error(`calculate through a round: ${JSON.stringify(results[0])}`);
      },
    );
    progress(`mcp-server: ${calls} calculate calls through /mcp on 2026-07-28 and through the round API, alternating`);
    const [calc26McpUs, calc26RoundUs] = await compare(
      calls,
      async (i) => {
        const r = await viaMcp26.callTool({
          name: 'calculate',
          arguments: { expression: `${i}*11` },
          _meta: { 'tool-dispatch/run': `calc26-mcp-${i + WARM}` },
        });
        expectOk('calculate through /mcp (2026-07-28)', r);
      },
      async (i) => {
        const { results } = await td.submitRound('bench-round', `calc26-round-${i + WARM}`, [
          { id: 'c', name: 'calculate', args: { expression: `${i}*11` } },
        ]);
        if (results[0]?.status !== 'ok') throw new Error(`calculate through a round: ${JSON.stringify(results[0])}`);
      },
    );
    progress(`mcp-server: ${calls} echo calls through /mcp to server-everything and straight to it, alternating`);
    const [echoMcpUs, echoDirectUs] = await compare(
      calls,
      async (i) => {
        const r = await viaMcp.callTool({
          name: ECHO,
          arguments: { message: `m ${i}` },
          _meta: { 'tool-dispatch/run': `echo-mcp-${i + WARM}` },
        });
        expectOk('echo through /mcp', r);
      },
      async (i) => {
        const r = await direct.callTool({ name: 'echo', arguments: { message: `m ${i}` } });
        expectOk('echo straight to server-everything', r);
      },
    );
    return { calls, calcMcpUs, calcRoundUs, calc26McpUs, calc26RoundUs, echoMcpUs, echoDirectUs };
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const p of procs.reverse()) await stopChild(p);
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function printMcpServer(f: McpServerFigures): void {
  const us = (v: number) => `${v.toFixed(0)} µs/call`.padStart(14);
  console.log(
    `\nMCP server: what /mcp costs a client (bin/tool-dispatch dev, official SDK client, ${f.calls} sequential calls per side, a new run each)`,
  );
  console.log(`  calculate through /mcp                      ${us(f.calcMcpUs)}`);
  console.log(`  calculate through the round API             ${us(f.calcRoundUs)}`);
  console.log(`  ratio                                       ${(f.calcMcpUs / f.calcRoundUs).toFixed(2)}×`);
  console.log(`  calculate through /mcp, 2026-07-28          ${us(f.calc26McpUs)}  (stateless: no session lookup)`);
  console.log(`  calculate through the round API             ${us(f.calc26RoundUs)}`);
  console.log(`  ratio                                       ${(f.calc26McpUs / f.calc26RoundUs).toFixed(2)}×`);
  console.log(`  server-everything echo through /mcp         ${us(f.echoMcpUs)}  (client → /mcp → McpHub → upstream)`);
  console.log(
    `  server-everything echo straight to it       ${us(f.echoDirectUs)}  (the same client, Streamable HTTP)`,
  );
  console.log(`  ratio                                       ${(f.echoMcpUs / f.echoDirectUs).toFixed(2)}×`);
}
