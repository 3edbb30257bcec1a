import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueExecutor } from '../../packages/coordinator/src/executors/queue/queue-executor.js';
import { execJob } from '../support/exec-jobs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';

// `tool-dispatch worker` (the real CLI, its built dist/) stopped with SIGTERM: it exits 0 within
// its drain time (SHUTDOWN_LIMIT_MS, 20 s, in app/serve.ts) whatever it is doing: idle, running
// a call that ends within it (which finishes and reports first), or running one that would not.
const root = fileURLToPath(new URL('../..', import.meta.url));
const DRAIN_MS = 20_000;
/** Room for a loaded machine on top of the drain time: the process must be gone by then. */
const EXIT_BOUND_MS = DRAIN_MS + 10_000;

let server: TestRedis;
let dir: string;
const children: ChildProcess[] = [];
const executors: QueueExecutor[] = [];

beforeAll(async () => {
  server = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'td-sigterm-'));
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const e of executors.splice(0)) await e.close();
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Worker {
  child: ChildProcess;
  /** Resolves with the exit code (or signal) and the time from `stop()` to the exit. */
  stop(): Promise<{ code: number | null; signal: string | null; ms: number }>;
}

async function startWorkerProcess(prefix: string): Promise<Worker> {
  const child = spawn(path.join(root, 'bin', 'tool-dispatch'), ['worker', '--port', '0'], {
    env: { ...process.env, REDIS_URL: server.url, TD_PREFIX: prefix },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let output = '';
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready:\n${output}`)), 60_000);
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
      if (/consuming/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    child,
    stop: async () => {
      const at = Date.now();
      child.kill('SIGTERM');
      const bound = new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`still running ${EXIT_BOUND_MS} ms after SIGTERM:\n${output}`)),
          EXIT_BOUND_MS,
        ),
      );
      const { code, signal } = await Promise.race([exited, bound]);
      return { code, signal, ms: Date.now() - at };
    },
  };
}

async function executor(prefix: string): Promise<QueueExecutor> {
  const e = new QueueExecutor({ redisUrl: server.url, prefix, pollIntervalMs: 200 });
  executors.push(e);
  await e.waitUntilReady();
  return e;
}

/** Resolves once a `run_command` of the worker has started (its marker file written). */
async function started(marker: string): Promise<void> {
  const { access } = await import('node:fs/promises');
  for (let i = 0; i < 600; i++) {
    if (
      await access(marker).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the command never started');
}

let markers = 0;

/** A worker process running one serial `run_command` (`command` after it marks its start), once it has started. */
async function workerRunning(command: string, timeoutMs: number) {
  const prefix = randomPrefix();
  const worker = await startWorkerProcess(prefix);
  const e = await executor(prefix);
  const marker = path.join(dir, `started-${++markers}`);
  const job = execJob(
    'run_command',
    { command: `touch ${marker} && ${command}` },
    { workspace: dir, queue: 'serial', timeoutMs },
  );
  const outcome = e.execute(job, new AbortController().signal);
  await started(marker);
  return { worker, outcome };
}

describe('a worker process on SIGTERM', () => {
  it('exits 0 at once when idle', async () => {
    const worker = await startWorkerProcess(randomPrefix());
    const exit = await worker.stop();
    expect(exit).toMatchObject({ code: 0, signal: null });
  }, 120_000);

  it('lets the call in flight finish and report, then exits 0', async () => {
    const { worker, outcome } = await workerRunning('sleep 2 && echo done', 60_000);
    const exit = worker.stop();
    expect(await outcome).toMatchObject({ status: 'ok' });
    expect((await exit).code).toBe(0);
  }, 120_000);

  it('exits within its drain time when the call in flight would run longer', async () => {
    const { worker } = await workerRunning('sleep 300', 600_000);
    const { code } = await worker.stop();
    expect(code).toBe(0);
  }, 120_000);
});
