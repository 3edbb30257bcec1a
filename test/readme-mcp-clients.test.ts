import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Service, startService } from './conformance/service.js';
import { startTargetServer, type TargetServer } from './conformance/target-server.js';
import { type FakeModel, startFakeModel } from './mcp-server/fake-model.js';
import { inspector, inspectorCli } from './mcp-server/inspector.js';

// The README's "Use it from an MCP client", each snippet as written against a fresh `dev` with a
// token, the documented address (http://127.0.0.1:8080) replaced by the test's:
// - Claude Code: each sh block run by sh with a `claude` of ours first on PATH that records its
//   argv; a real MCP client (the Inspector's CLI) then uses the URL and header it was given, or
//   launches the stdio command (`bin/tool-dispatch mcp`) with the environment it was given.
// - Cursor: the JSON parsed; its URL and headers (${env:…} filled in as Cursor does) used by the
//   official SDK client to list and call.
// - The OpenAI Agents SDK and the AI SDK: compiled under the examples' strict settings (`tsc`),
//   then run as processes whose model is a fake OpenAI server (`OPENAI_BASE_URL`); each prints the
//   model's final answer, which holds what `calculate` answered through /mcp.
// Needs the build (`pnpm test` builds first).

const run = (file: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { timeout: 120_000, ...options }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const DOCUMENTED = 'http://127.0.0.1:8080';
const TOKEN = 'readme-mcp-token';
/** Cursor's spelling of an environment variable in mcp.json. */
const CURSOR_ENV_TOKEN = ['$', '{env:TD_API_TOKEN}'].join('');

let service: Service | undefined;
let target: TargetServer | undefined;
let model: FakeModel | undefined;
let dir = '';
let blocks: { sh: string; stdio: string; json: string; ts: string[] };

/** The fenced blocks of the README's "Use it from an MCP client", by language, in order. */
async function sectionBlocks(): Promise<{ sh: string; stdio: string; json: string; ts: string[] }> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const from = readme.indexOf('\n## Use it from an MCP client\n');
  if (from < 0) throw new Error('README.md has no "Use it from an MCP client" section');
  const to = readme.indexOf('\n## ', from + 5);
  const section = readme.slice(from, to < 0 ? undefined : to);
  const of = (lang: string) =>
    [...section.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] ?? '');
  const [sh, stdio] = of('sh');
  const [json] = of('json');
  if (sh === undefined || stdio === undefined || json === undefined)
    throw new Error('the section needs two sh blocks (HTTP, stdio) and a json block');
  return { sh, stdio, json, ts: of('ts') };
}

beforeAll(async () => {
  blocks = await sectionBlocks();
  target = await startTargetServer();
  service = await startService({ mode: 'embedded', target, env: { TD_API_TOKEN: TOKEN } });
  model = await startFakeModel();
  await mkdir(path.join(ROOT, 'examples', 'dist'), { recursive: true });
  dir = await mkdtemp(path.join(ROOT, 'examples', 'dist', 'readme-mcp-'));
}, 150_000);

afterAll(async () => {
  await service?.stop();
  await target?.close();
  await model?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const here = (text: string) => text.replaceAll(DOCUMENTED, service?.base ?? '');

/** Runs an sh block as written with a `claude` of ours first on PATH; the argv it was given. */
async function claudeArgv(block: string, label: string): Promise<string[]> {
  const bin = path.join(dir, `bin-${label}`);
  await mkdir(bin);
  const argsFile = path.join(dir, `claude-args-${label}`);
  await writeFile(path.join(bin, 'claude'), `#!/bin/sh\nprintf '%s\\n' "$@" > "${argsFile}"\n`);
  await chmod(path.join(bin, 'claude'), 0o755);
  const ran = await run('sh', ['-c', `set -e\n${here(block)}`], {
    cwd: ROOT,
    env: { PATH: `${bin}:${process.env.PATH}`, TD_API_TOKEN: TOKEN, HOME: path.join(dir, 'home') },
  });
  expect(ran.code, ran.stderr).toBe(0);
  return (await readFile(argsFile, 'utf8')).trimEnd().split('\n');
}

describe('README: Use it from an MCP client', () => {
  it('Claude Code: `claude mcp add` gets a URL and header that a real MCP client connects and calls with', async () => {
    expect(blocks.sh.trim().split('\n')).toHaveLength(1);
    expect(blocks.sh).toContain(`${DOCUMENTED}/mcp`);
    const argv = await claudeArgv(blocks.sh, 'http');
    expect(argv).toEqual([
      'mcp',
      'add',
      '--transport',
      'http',
      'tool-dispatch',
      `${service?.base}/mcp`,
      '--header',
      `Authorization: Bearer ${TOKEN}`,
    ]);
    const [url, header] = [argv[5] ?? '', argv[7] ?? ''];
    const call = await inspectorCli(url, [
      '--header',
      header,
      '--method',
      'tools/call',
      '--tool-name',
      'calculate',
      '--tool-args-json',
      '{"expression":"6*7"}',
    ]);
    expect(call.code, call.stderr).toBe(0);
    expect(call.json?.result).toMatchObject({ isError: false, structuredContent: { value: 42 } });
  }, 120_000);

  it('Claude Code over stdio: `claude mcp add … -- bin/tool-dispatch mcp` gets a command a real MCP client launches and calls', async () => {
    expect(blocks.stdio.trim().split('\n')).toHaveLength(1);
    const argv = await claudeArgv(blocks.stdio, 'stdio');
    const home = path.join(dir, 'home');
    expect(argv).toEqual([
      'mcp',
      'add',
      'tool-dispatch',
      '--env',
      `TD_WORKSPACE_ROOT=${home}/.tool-dispatch`,
      '--',
      path.join(ROOT, 'bin', 'tool-dispatch'),
      'mcp',
    ]);
    const command = argv.slice(argv.indexOf('--') + 1);
    const call = await inspector([
      ...command,
      '-e',
      argv[4] ?? '',
      '--method',
      'tools/call',
      '--tool-name',
      'calculate',
      '--tool-args-json',
      '{"expression":"6*7"}',
    ]);
    expect(call.code, call.stderr).toBe(0);
    expect(call.json?.result).toMatchObject({ isError: false, structuredContent: { value: 42 } });
    // It ran embedded, its session's workspace under the TD_WORKSPACE_ROOT Claude Code was given.
    expect((await readdir(path.join(home, '.tool-dispatch', 'default'))).some((d) => d.startsWith('mcp-'))).toBe(true);
  }, 120_000);

  it('Cursor: mcp.json names /mcp with the bearer header, and the official SDK client lists and calls with it', async () => {
    const config = JSON.parse(blocks.json) as {
      mcpServers: Record<string, { url: string; headers: Record<string, string> }>;
    };
    const entry = config.mcpServers['tool-dispatch'];
    expect(entry).toEqual({
      url: `${DOCUMENTED}/mcp`,
      headers: { Authorization: `Bearer ${CURSOR_ENV_TOKEN}` },
    });
    const headers = Object.fromEntries(
      Object.entries(entry?.headers ?? {}).map(([k, v]) => [k, v.replace(CURSOR_ENV_TOKEN, TOKEN)]),
    );
    const client = new Client({ name: 'cursor-config-check', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(here(entry?.url ?? '')), { requestInit: { headers } }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['calculate', 'run_command', 'find_tools']));
      const result = await client.callTool({ name: 'calculate', arguments: { expression: '6*7' } });
      expect(result).toMatchObject({ isError: false, structuredContent: { value: 42 } });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('the OpenAI Agents SDK and the AI SDK snippets compile under --strict and run an agent loop through /mcp', async () => {
    expect(blocks.ts).toHaveLength(2);
    const [agents, aiSdk] = blocks.ts as [string, string];
    expect(agents).toContain("from '@openai/agents'");
    expect(aiSdk).toContain("from '@ai-sdk/mcp'");
    await writeFile(path.join(dir, 'agents.ts'), here(agents));
    await writeFile(path.join(dir, 'ai-sdk.ts'), here(aiSdk));
    const tsconfig = {
      extends: path.join(ROOT, 'examples', 'tsconfig.base.json'),
      compilerOptions: { rootDir: '.', noEmit: true },
      files: ['agents.ts', 'ai-sdk.ts'],
    };
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const compiled = await run(process.execPath, [TSC, '-p', dir]);
    expect(compiled.stdout, 'tsc').toBe('');
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      TD_API_TOKEN: TOKEN,
      OPENAI_API_KEY: 'fake-key',
      OPENAI_BASE_URL: `${model?.url}/v1`,
      OPENAI_AGENTS_DISABLE_TRACING: '1',
    };
    for (const file of ['agents.ts', 'ai-sdk.ts']) {
      const before = model?.offered.length ?? 0;
      const out = await run(process.execPath, ['--import', 'tsx', path.join(dir, file)], { env, cwd: ROOT });
      expect(out.code, `${file}: ${out.stderr}`).toBe(0);
      expect(out.stdout.trim(), file).toBe('6*7 = 42, says the calculator.');
      // Two model turns, each offered the tools the client listed from /mcp (no run_tool: provider mcp).
      const turns = model?.offered.slice(before) ?? [];
      expect(turns, file).toHaveLength(2);
      for (const tools of turns) {
        expect(tools).toEqual(expect.arrayContaining(['calculate', 'run_command', 'find_tools']));
        expect(tools).not.toContain('run_tool');
      }
    }
  }, 240_000);
});
