import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcesses, killGroup, type Proc } from './support/cli-procs.js';
import { spawnRedisServer, type TestRedis } from './support/redis.js';

// TD_MCP_CONFIG as an operator meets it (API.md): a bad file stops `dev` and `worker` at once with
// exit 2 and one line naming the problem; a good one with keys this client ignores starts and says so.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/tool-dispatch');
const FAKE = path.join(ROOT, 'test/support/mcp-fake-server.mjs');
/**
 * How long a refusal may take: a few seconds, or, on a machine so busy that the good config's
 * start (beside them) takes longer to listen, twice that. The refusal itself is one file read,
 * but any start of the CLI costs about 1.5 s of CPU (its imports). A process that starts instead
 * of refusing runs until it is killed, at KILL_AFTER_MS.
 */
const REFUSED_WITHIN_MS = 5_000;
const KILL_AFTER_MS = 60_000;
/** A test waits for its process to end or be killed. */
const WAIT_MS = KILL_AFTER_MS + 5_000;

const dir = mkdtempSync(path.join(tmpdir(), 'td-mcp-cli-'));
const procs = new CliProcesses();
let redis: TestRedis | undefined;
afterAll(async () => {
  // SIGTERM lets dev close its MCP server; whatever is left of the group goes with SIGKILL.
  procs.killAll('SIGTERM');
  await Promise.all(
    procs.procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
          const timer = setTimeout(resolve, 5_000);
          p.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
        }),
    ),
  );
  procs.killAll('SIGKILL');
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a config file of `content` (a string as is, anything else as JSON) and gives its path. */
function configFile(name: string, content: unknown): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

interface Exit {
  code: number | null;
  stderr: string;
  stdout: string;
  ms: number;
}

/**
 * Runs the CLI to its end (killed past the limit), with only the given variables set beyond PATH
 * and HOME. In a process group of its own, like cli-procs.ts's (under Linux's autogroup
 * scheduling, that also keeps it from waiting behind everything else this session runs).
 */
function run(args: string[], env: Record<string, string>): Promise<Exit> {
  const started = Date.now();
  const child = spawn(BIN, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const limit = setTimeout(() => killGroup({ child, output: [], port: 0 }, 'SIGKILL'), KILL_AFTER_MS);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      clearTimeout(limit);
      resolve({ code, stderr, stdout, ms: Date.now() - started });
    });
  });
}

/** Expects an exit 2, in time, with one line on stderr naming `file` and matching `problem`. */
function expectRefused(r: Exit, file: string, problem: RegExp): void {
  expect(r.code, `stderr: ${r.stderr}`).toBe(2);
  expect(r.ms).toBeLessThan(Math.max(REFUSED_WITHIN_MS, 2 * goodStartMs));
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`TD_MCP_CONFIG ${file}`);
  expect(lines[0]).toMatch(problem);
}

const BAD: Array<[string, unknown, RegExp]> = [
  ['malformed JSON', '{\n  "mcpServers": {\n    "fs": {"command": x}\n  }\n}\n', /is not valid JSON/],
  ['a server name with a space', { mcpServers: { 'my server': { command: 'x' } } }, /"my server".*must match/],
  ['a 33-character server name', { mcpServers: { ['s'.repeat(33)]: { command: 'x' } } }, /must match.*at most 32/],
  ['neither command nor url', { mcpServers: { fs: { args: ['x'] } } }, /"fs" needs exactly one of "command".*neither/],
];
const MISSING = 'a missing file';

// Every process starts at once, in beforeAll: each is a node start, and the machine is shared.
const files = new Map<string, string>();
const exits = new Map<string, Promise<Exit>>();
let workerExit: Promise<Exit>;
let workerFile: string;
let good: Promise<Proc>;
let goodFile: string;
let goodStartMs = 0;
beforeAll(async () => {
  redis = await spawnRedisServer();
  for (const [what, content] of BAD) files.set(what, configFile(what.replace(/\W+/g, '-'), content));
  files.set(MISSING, path.join(dir, 'no-such-file.json'));
  for (const [what, file] of files) exits.set(what, run(['dev', '--port', '0'], { TD_MCP_CONFIG: file }));
  workerFile = configFile('worker-malformed', '{"mcpServers": {');
  workerExit = run(['worker', '--port', '0'], { TD_MCP_CONFIG: workerFile, REDIS_URL: redis.url });
  goodFile = configFile('good', {
    mcpServers: { fake: { command: process.execPath, args: [FAKE], autoApprove: ['sleep'] } },
  });
  const started = Date.now();
  good = procs.start(['dev'], { TD_MCP_CONFIG: goodFile, REDIS_URL: '', PORT: '' }, /listening on/);
  good.catch(() => undefined);
  await good.then(
    () => {
      goodStartMs = Date.now() - started;
    },
    () => undefined,
  );
}, KILL_AFTER_MS);

describe('tool-dispatch dev with a bad TD_MCP_CONFIG', () => {
  it.each(BAD)(
    'exits 2 on %s, naming the problem in one line',
    async (what, _content, problem) => {
      expectRefused(await (exits.get(what) as Promise<Exit>), files.get(what) as string, problem);
    },
    WAIT_MS,
  );

  it(
    'exits 2 on a missing file, naming it',
    async () => {
      expectRefused(
        await (exits.get(MISSING) as Promise<Exit>),
        files.get(MISSING) as string,
        /cannot read it \(ENOENT/,
      );
    },
    WAIT_MS,
  );

  it(
    'starts nothing before refusing (no listening line)',
    async () => {
      for (const exit of exits.values()) expect((await exit).stdout).not.toMatch(/listening on/);
    },
    WAIT_MS,
  );
});

describe('tool-dispatch worker with a bad TD_MCP_CONFIG', () => {
  it(
    'exits 2 on malformed JSON, with REDIS_URL set to a Redis that answers',
    async () => {
      expectRefused(await workerExit, workerFile, /is not valid JSON/);
    },
    WAIT_MS,
  );
});

describe('tool-dispatch dev with a good TD_MCP_CONFIG', () => {
  it(
    'starts, logging the unknown key it ignored',
    async () => {
      const proc = await good;
      const output = proc.output.join('');
      expect(output).toContain(`TD_MCP_CONFIG ${goodFile}: server "fake": ignored unknown key "autoApprove"`);
      expect(output).toMatch(/mcp: connecting to 1 server \(fake\)/);
      expect(proc.child.exitCode).toBeNull();
    },
    WAIT_MS,
  );
});
