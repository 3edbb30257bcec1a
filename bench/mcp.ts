// MCP through the dispatcher (issue 12): the per-call overhead of an MCP call through the three
// passes (embedded engine, McpHub, one stdio server-everything) against the same SDK client calling
// a second server-everything directly, in this process; and the schema-token economy of deferral
// (characters of the openai tools array + turn context against the full schemas of GET /v1/tools).

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createEngine } from '@tool-dispatch/coordinator';
import { mcpToolName, resolveConfig } from '@tool-dispatch/shared';
import { McpHub } from '@tool-dispatch/worker';

export interface McpFigures {
  calls: number;
  dispatcherUsPerCall: number;
  directUsPerCall: number;
  ratio: number;
  /** Characters the model is sent with deferral (openai tools array + turn context). */
  deferredChars: number;
  /** Characters of every tool's full definition (what a dispatcher without deferral sends). */
  fullChars: number;
  tools: number;
}

const everything = () => {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@modelcontextprotocol/server-everything/package.json');
  return path.join(path.dirname(pkg), 'dist', 'index.js');
};

/** Sequential echo calls straight through the SDK client: the floor any MCP dispatcher sits on. */
async function direct(calls: number): Promise<number> {
  const client = new Client({ name: 'bench', version: '1' }, { capabilities: {} });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [everything(), 'stdio'], stderr: 'ignore' }),
  );
  try {
    for (let i = 0; i < 50; i++) await client.callTool({ name: 'echo', arguments: { message: `warm ${i}` } });
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await client.callTool({ name: 'echo', arguments: { message: `m ${i}` } });
    return ((performance.now() - t0) * 1000) / calls;
  } finally {
    await client.close();
  }
}

export async function benchMcp(calls: number, progress: (s: string) => void): Promise<McpFigures> {
  const root = mkdtempSync(path.join(tmpdir(), 'td-bench-mcp-'));
  const hub = new McpHub({
    servers: [
      {
        name: 'everything',
        transport: 'stdio',
        command: process.execPath,
        args: [everything(), 'stdio'],
        env: {},
        confirm: false,
      },
    ],
  });
  await hub.start();
  const engine = await createEngine({ config: resolveConfig({ workspaceRoot: root, mode: 'embedded' }, {}), mcp: hub });
  const ECHO = mcpToolName('everything', 'echo');
  try {
    await engine.putSession('bench', { provider: 'openai' });
    const view = await engine.toolsFor('bench');
    const catalog = await engine.catalog();
    const deferredChars = JSON.stringify(view.tools).length + view.context.length;
    const fullChars = JSON.stringify(
      catalog.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
    ).length;
    await engine.submitRound({
      session: 'bench',
      run: 'setup',
      calls: [{ id: 'f', name: 'find_tools', args: { names: [ECHO] } }],
    });
    const call = (i: number) =>
      engine.submitRound({
        session: 'bench',
        // A new run per call: no dedupe hit, every call reaches the server.
        run: `run-${i}`,
        calls: [{ id: `c${i}`, name: 'run_tool', args: { name: ECHO, args: { message: `m ${i}` } } }],
      });
    for (let i = 0; i < 50; i++) await call(-1 - i);
    progress(`mcp: ${calls} echo calls through the dispatcher`);
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) {
      const r = await call(i);
      if (r.results[0]?.status !== 'ok')
        throw new Error(`echo through the dispatcher: ${JSON.stringify(r.results[0])}`);
    }
    const dispatcherUsPerCall = ((performance.now() - t0) * 1000) / calls;
    progress(`mcp: ${calls} echo calls straight through the SDK client`);
    const directUsPerCall = await direct(calls);
    return {
      calls,
      dispatcherUsPerCall,
      directUsPerCall,
      ratio: dispatcherUsPerCall / directUsPerCall,
      deferredChars,
      fullChars,
      tools: catalog.length,
    };
  } finally {
    await engine.drain();
    await hub.close();
    rmSync(root, { recursive: true, force: true });
  }
}
