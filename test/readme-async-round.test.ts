import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CliProcesses, type Proc } from './support/cli-procs.js';

// The README's "A long command: hand the round over" runs as written against a fresh
// `bin/tool-dispatch dev` on a free port (the only change: `127.0.0.1:8080` becomes that port):
// the typed client's loop (from a folder under examples/dist/, so it resolves the built client
// as the examples do, compiled under their strict settings and run with tsx) and the curl loop (in one shell). Needs the build.

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const procs = new CliProcesses();
let readme = '';
let dev: Proc;
const dirs: string[] = [];

beforeAll(async () => {
  readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const root = await mkdtemp(path.join(tmpdir(), 'td-readme-async-'));
  dirs.push(root);
  dev = await procs.start(
    ['dev'],
    {
      TD_WORKSPACE_ROOT: path.join(root, '.workspaces'),
      PORT: '',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
      TD_MCP_CONFIG: '',
      TD_API_TOKEN: '',
    },
    /listening on http:/,
  );
}, 120_000);

afterAll(async () => {
  procs.killAll('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const section = () => {
  const at = readme.indexOf('\n## A long command: hand the round over (v1.3)\n');
  if (at < 0) throw new Error('README.md has no "A long command" section');
  return readme.slice(at, readme.indexOf('\n## ', at + 1));
};
const onPort = (code: string) => code.replaceAll('127.0.0.1:8080', `127.0.0.1:${dev.port}`);

it('runs the typed client’s loop: submitRoundAsync, then getRound with wait until done', async () => {
  const code = section().match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code) throw new Error('no ```ts block in the section');
  expect(code).toContain('submitRoundAsync');
  expect(code).toContain('getRound');
  await mkdir(path.join(ROOT, 'examples', 'dist'), { recursive: true });
  const dir = await mkdtemp(path.join(ROOT, 'examples', 'dist', 'readme-async-'));
  dirs.push(dir);
  await writeFile(path.join(dir, 'main.mts'), onPort(code));
  // It compiles under the examples' strict settings, as written.
  const tsconfig = {
    extends: path.join(ROOT, 'examples', 'tsconfig.base.json'),
    compilerOptions: { rootDir: '.', noEmit: true },
    files: ['main.mts'],
  };
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const compiled = await run(process.execPath, [tsc, '-p', dir]).then(
    () => '',
    (e: { stdout?: string }) => e.stdout ?? String(e),
  );
  expect(compiled).toBe('');
  const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
  const { stdout } = await run(tsx, [path.join(dir, 'main.mts')], { cwd: dir, timeout: 90_000 });
  expect(stdout).toMatch(/exitCode: 0/);
  expect(stdout).toMatch(/stdout: 'built\\n'/);
}, 120_000);

it('runs the curl loop: 202 with Location, then GET with wait until 200, the answer as a waiting POST gives it', async () => {
  const from = readme.indexOf('<!-- async-round:start -->');
  const to = readme.indexOf('<!-- async-round:end -->');
  const script = readme.slice(from, to).match(/```sh\n([\s\S]*?)```/)?.[1];
  if (from < 0 || to < from || !script) throw new Error('no ```sh block between the async-round markers');
  const dir = await mkdtemp(path.join(tmpdir(), 'td-readme-async-sh-'));
  dirs.push(dir);
  await run('sh', ['-c', onPort(script)], { cwd: dir, timeout: 90_000 }).then(({ stdout }) => {
    const answer = JSON.parse(stdout);
    expect(answer.results).toHaveLength(1);
    expect(answer.results[0]).toMatchObject({
      id: 'c1',
      name: 'run_command',
      status: 'ok',
      output: { stdout: 'built\n' },
    });
  });
  // The same answer under its key, waited for.
  const res = await fetch(`http://127.0.0.1:${dev.port}/v1/sessions/s-long/runs/run-2/rounds`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'build-2' },
    body: JSON.stringify({ calls: [{ id: 'c1', name: 'run_command', args: { command: 'sleep 3; echo built' } }] }),
  });
  expect(JSON.parse(await readFile(path.join(dir, 'answer.json'), 'utf8'))).toEqual(await res.json());
}, 120_000);
