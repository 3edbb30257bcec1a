// What the model sees of a large catalog (API.md v1.2 "What the model sees", issue 28): the
// built-ins plus five real npm MCP servers started by the service (server-everything,
// server-filesystem, server-memory, server-sequential-thinking, server-github: ≥ 60 tools).
// find_tools ranks the labelled queries of find-tools-queries.json (recall@1 and recall@5 are
// printed), exact names come first, and the openai tools array plus the turn context stay a small
// part of the full definitions.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { direct, uid } from '../conformance/api.js';
import { useService } from '../conformance/fixture.js';
import { REPO_ROOT, sleep } from '../conformance/service.js';

const pkgBin = (pkg: string) => {
  const dir = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', pkg);
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(dir, Object.values(json.bin)[0] as string);
};

/** The five servers' config (TD_MCP_CONFIG); written before the service starts. */
function mcpConfig(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-economy-'));
  const fsRoot = path.join(dir, 'fs-root');
  mkdirSync(fsRoot);
  const server = (pkg: string, ...args: string[]) => ({ command: process.execPath, args: [pkgBin(pkg), ...args] });
  const mcpServers = {
    everything: server('server-everything', 'stdio'),
    fs: server('server-filesystem', fsRoot),
    memory: { ...server('server-memory'), env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') } },
    thinking: server('server-sequential-thinking'),
    github: server('server-github'),
  };
  const file = path.join(dir, 'mcp.json');
  writeFileSync(file, JSON.stringify({ mcpServers }));
  return file;
}

interface Labelled {
  query: string;
  expect: string[];
}
const LABELLED = (
  JSON.parse(readFileSync(path.join(import.meta.dirname, 'find-tools-queries.json'), 'utf8')) as {
    queries: Labelled[];
  }
).queries;
const SENTINELS = [
  'mcp__everything__echo',
  'mcp__fs__read_text_file',
  'mcp__memory__create_entities',
  'mcp__thinking__sequentialthinking',
  'mcp__github__create_issue',
];

const f = useService('embedded', { env: { TD_MCP_CONFIG: mcpConfig() } });

/** Every tool a session may find (find_tools with neither query nor names), once the five servers are up. */
async function offered(session: string): Promise<Array<{ name: string; description: string; parameters: unknown }>> {
  for (const end = Date.now() + 90_000; ; await sleep(300)) {
    const r = await f.api.one(session, direct('find_tools', {}));
    const tools = (r.output?.tools ?? []) as Array<{ name: string; description: string; parameters: unknown }>;
    const names = new Set(tools.map((t) => t.name));
    if (SENTINELS.every((n) => names.has(n)) && tools.length >= 60) return tools;
    if (Date.now() > end)
      throw new Error(`the catalog has ${tools.length} tools, not the five servers' (${[...names]})`);
  }
}

/** find_tools {query, limit} for each query (in rounds of 50): the names it answered, best first. */
async function search(session: string, queries: string[], limit?: number): Promise<string[][]> {
  const out: string[][] = [];
  for (let i = 0; i < queries.length; i += 50) {
    const chunk = queries.slice(i, i + 50);
    const calls = chunk.map((query) => direct('find_tools', limit ? { query, limit } : { query }));
    const b = await f.api.round(session, uid('search'), calls);
    for (const r of b.results) {
      expect(r.status, JSON.stringify(r)).toBe('ok');
      out.push(((r.output?.tools ?? []) as Array<{ name: string }>).map((t) => t.name));
    }
  }
  return out;
}

it('finds the tool of >= 95% of the labelled queries within its first 5 answers (recall@5), printing recall@1 and @5', async () => {
  const s = uid('s');
  await f.api.putSession(s, { provider: 'openai' });
  const tools = await offered(s);
  const known = new Set(tools.map((t) => t.name));
  expect(LABELLED.length).toBeGreaterThanOrEqual(100);
  for (const l of LABELLED) for (const n of l.expect) expect(known, `${l.query} expects ${n}`).toContain(n);
  const got = await search(
    s,
    LABELLED.map((l) => l.query),
  );
  let at1 = 0;
  let at5 = 0;
  const misses: string[] = [];
  LABELLED.forEach((l, i) => {
    const names = got[i] ?? [];
    expect(names.length).toBeLessThanOrEqual(5);
    if (l.expect.includes(names[0] ?? '')) at1 += 1;
    if (names.some((n) => l.expect.includes(n))) at5 += 1;
    else misses.push(`${JSON.stringify(l.query)} → ${names.join(', ')}`);
  });
  const pct = (n: number) => ((100 * n) / LABELLED.length).toFixed(1);
  console.log(
    `find_tools over ${tools.length} tools, ${LABELLED.length} labelled queries: recall@1 ${pct(at1)}%, recall@5 ${pct(at5)}%` +
      (misses.length ? `; missed: ${misses.join('; ')}` : ''),
  );
  expect(at5 / LABELLED.length).toBeGreaterThanOrEqual(0.95);
}, 180_000);

it('answers a tool first when the query is its name, or a word of the query is', async () => {
  const s = uid('s');
  await f.api.putSession(s, { provider: 'openai' });
  const names = (await offered(s)).map((t) => t.name);
  const byName = await search(s, names);
  const wrong = names.filter((n, i) => byName[i]?.[0] !== n);
  expect(wrong, 'names not ranked first for their own name').toEqual([]);
  const worded = names.map((n) => `please call ${n} for me`);
  const byWord = await search(s, worded, 3);
  expect(names.filter((n, i) => byWord[i]?.[0] !== n)).toEqual([]);
}, 180_000);

it('keeps the openai tools array plus the turn context within 10% of the full definitions, the context under 8000', async () => {
  const s = uid('s');
  await f.api.putSession(s, { provider: 'openai' });
  const tools = await offered(s);
  const openai = (t: { name: string; description: string; parameters: unknown }) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  });
  const full = JSON.stringify(tools.map(openai)).length;
  const view = await f.api.request('GET', `/v1/sessions/${s}/tools?format=openai`);
  const array = JSON.stringify(view.json.tools).length;
  const context = String(view.json.context).length;
  console.log(
    `${tools.length} tools: full definitions ${full} characters; openai tools array ${array} + context ${context} = ${array + context} (${((100 * (array + context)) / full).toFixed(1)}%)`,
  );
  expect(array + context).toBeLessThanOrEqual(full * 0.1);
  expect(context).toBeLessThan(8000);
  for (const server of ['everything', 'fs', 'memory', 'github'])
    expect(view.json.context).toContain(`MCP server ${server}`);
  for (const provider of ['anthropic', 'claude-code']) {
    const p = uid('s');
    await f.api.putSession(p, { provider });
    const v = await f.api.request('GET', `/v1/sessions/${p}/tools`);
    expect(String(v.json.context).length, provider).toBeLessThan(8000);
  }
}, 180_000);
