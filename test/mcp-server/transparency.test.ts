import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mcpToolName } from '@tool-dispatch/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type Service, startService } from '../conformance/service.js';
import { startTargetServer, type TargetServer } from '../conformance/target-server.js';
import { type InspectorRun, inspector, inspectorCli } from './inspector.js';

// Transparency, seen by a third-party client: the MCP Inspector's CLI calls server-everything's
// tools through tool-dispatch's `/mcp` (dev, the server over stdio in TD_MCP_CONFIG) and, as a
// second command, straight to a server-everything it launches itself; `content` and
// `structuredContent` must be the same (text, an image, resource links, annotated content,
// structured output), and tools/list must keep the server's annotations and input schemas.

const pkg = JSON.parse(
  readFileSync(
    path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'package.json'),
    'utf8',
  ),
) as { bin: Record<string, string> };
const EVERYTHING = path.join(
  REPO_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'server-everything',
  Object.values(pkg.bin)[0] ?? '',
);

/**
 * Tools server-everything registers only for some client capabilities (its `registerConditionalTools`):
 * the Inspector and the dispatcher's own MCP client declare different ones (roots, tasks; elicitation).
 */
const CAPABILITY_TOOLS = new Set(['get-roots-list', 'simulate-research-query']);

let service: Service | undefined;
let target: TargetServer | undefined;
let tmp = '';

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'td-mcp-transparency-'));
  const config = path.join(tmp, 'mcp.json');
  await writeFile(
    config,
    JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } }),
  );
  target = await startTargetServer();
  service = await startService({ mode: 'embedded', target, env: { TD_MCP_CONFIG: config } });
}, 150_000);

afterAll(async () => {
  await service?.stop();
  await target?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const direct = (args: string[]) => inspector([process.execPath, EVERYTHING, 'stdio', ...args]);
const viaMcp = (args: string[]) => inspectorCli(`${service?.base}/mcp`, args);
const result = (r: InspectorRun) => {
  expect(r.json?.result, `exit ${r.code}: ${r.stderr}`).toBeDefined();
  return r.json?.result as Record<string, unknown>;
};

describe('an upstream MCP server through /mcp, as the MCP Inspector sees it', () => {
  it('lists its tools under their catalog names with the server’s annotations and input schemas', async () => {
    const [theirs, ours] = await Promise.all([direct(['--method', 'tools/list']), viaMcp(['--method', 'tools/list'])]);
    const listed = (r: InspectorRun) =>
      result(r).tools as Array<{ name: string; inputSchema: unknown; annotations?: unknown }>;
    const byName = new Map(listed(ours).map((t) => [t.name, t]));
    const upstream = listed(theirs).filter((t) => !CAPABILITY_TOOLS.has(t.name));
    expect(upstream.length).toBeGreaterThanOrEqual(12);
    for (const tool of upstream) {
      const mine = byName.get(mcpToolName('everything', tool.name));
      expect(mine, tool.name).toBeDefined();
      expect(mine?.annotations, tool.name).toEqual(tool.annotations);
      expect(mine?.inputSchema, tool.name).toEqual(tool.inputSchema);
    }
  }, 120_000);

  const CALLS: Array<[string, Record<string, unknown>]> = [
    ['echo', { message: 'through the dispatcher' }],
    ['get-sum', { a: 2, b: 40 }],
    ['get-structured-content', { location: 'Chicago' }],
    ['get-tiny-image', {}],
    ['get-resource-links', { count: 2 }],
    ['get-annotated-message', { messageType: 'error', includeImage: true }],
  ];
  for (const [tool, args] of CALLS)
    it(`${tool}: the same content and structuredContent through /mcp as straight from the server`, async () => {
      const call = ['--method', 'tools/call', '--tool-args-json', JSON.stringify(args)];
      const [theirs, ours] = await Promise.all([
        direct([...call, '--tool-name', tool]),
        viaMcp([...call, '--tool-name', mcpToolName('everything', tool)]),
      ]);
      expect(ours.code, ours.stderr).toBe(theirs.code);
      const [t, o] = [result(theirs), result(ours)];
      expect(o.content).toEqual(t.content);
      expect(o.structuredContent).toEqual(t.structuredContent);
      expect(o.isError ?? false).toBe(t.isError ?? false);
      expect((o._meta as Record<string, unknown>)['tool-dispatch/result']).toMatchObject({ status: 'ok' });
    }, 120_000);
});
