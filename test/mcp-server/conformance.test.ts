import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT, type Service, startService } from '../conformance/service.js';
import { startTargetServer, type TargetServer } from '../conformance/target-server.js';

// The official MCP conformance tool (`@modelcontextprotocol/conformance server --url …`, every
// scenario it has: `--suite all`) against `/mcp` of `bin/tool-dispatch dev`. Every scenario that
// applies to a tools-only server must pass; the ones that need resources, prompts, logging,
// completions or the scenario's own test tools are listed, each with its reason, in
// conformance-expected-failures.json. The test fails on a failure not listed there, and on a
// listed one that passes (the list must then shrink). The tool's own baseline check (its
// `--expected-failures` YAML, written from the same list) must agree: exit 0.
//
// The tool sends no Authorization header, so this `dev` runs without TD_API_TOKEN. It is run on
// Node 20 through node20-fs-glob.mjs (its bundle imports fs.globSync, Node 22's, for a command we
// do not use).

const CONFORMANCE = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const NODE20_HOOK = path.join(REPO_ROOT, 'test', 'mcp-server', 'node20-fs-glob.mjs');
const EXPECTED: Record<string, string> = JSON.parse(
  readFileSync(path.join(REPO_ROOT, 'test', 'mcp-server', 'conformance-expected-failures.json'), 'utf8'),
).expectedFailures;

let service: Service | undefined;
let target: TargetServer | undefined;
let tmp = '';

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'td-mcp-conformance-'));
  target = await startTargetServer();
  service = await startService({ mode: 'embedded', target });
}, 150_000);

afterAll(async () => {
  await service?.stop();
  await target?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface ToolRun {
  code: number;
  out: string;
}

function conformance(args: string[]): Promise<ToolRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', NODE20_HOOK, CONFORMANCE, 'server', ...args],
      { cwd: tmp, timeout: 400_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, out: `${stdout}\n${stderr}` });
      },
    );
  });
}

/** The SUMMARY lines (`✓ name: 1 passed, 0 failed` / `✗ …`) as scenario → passed. */
function summary(out: string): Map<string, boolean> {
  const from = out.indexOf('=== SUMMARY ===');
  if (from < 0) throw new Error(`the conformance tool printed no summary:\n${out.slice(-3000)}`);
  const scenarios = new Map<string, boolean>();
  for (const m of out.slice(from).matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gm))
    scenarios.set(m[2] as string, m[1] === '✓');
  return scenarios;
}

it('passes every conformance scenario that applies to a tools-only server; the rest fail as listed, with reasons', async () => {
  const url = `${service?.base}/mcp`;
  const baseline = path.join(tmp, 'baseline.yml');
  await writeFile(
    baseline,
    `server:\n${Object.keys(EXPECTED)
      .map((s) => `  - ${s}\n`)
      .join('')}`,
  );
  const run = await conformance([
    '--url',
    url,
    '--suite',
    'all',
    '--expected-failures',
    baseline,
    '--output-dir',
    path.join(tmp, 'results'),
  ]);
  const scenarios = summary(run.out);
  expect(scenarios.size, run.out.slice(-3000)).toBeGreaterThanOrEqual(30);
  const passed = [...scenarios].filter(([, ok]) => ok).map(([s]) => s);
  const failed = [...scenarios].filter(([, ok]) => !ok).map(([s]) => s);
  const unexpected = failed.filter((s) => !(s in EXPECTED));
  const nowPassing = passed.filter((s) => s in EXPECTED);
  const gone = Object.keys(EXPECTED).filter((s) => !scenarios.has(s));
  expect({ unexpected, nowPassing, gone }, run.out.slice(-6000)).toEqual({ unexpected: [], nowPassing: [], gone: [] });
  // What a tools-only server must pass, by name (so a scenario renamed away cannot hide it).
  expect(passed).toEqual(
    expect.arrayContaining([
      'server-initialize',
      'ping',
      'tools-list',
      'tools-call-simple-text',
      'tools-call-error',
      'server-sse-multiple-streams',
      'dns-rebinding-protection',
    ]),
  );
  // The tool's own verdict with the same baseline: no regression, no stale entry.
  expect(run.code, run.out.slice(-3000)).toBe(0);
}, 450_000);
