import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueExecutor } from '../../packages/coordinator/src/executors/queue/queue-executor.js';
import type { ExecJob, ExecOutcome } from '../../packages/shared/src/index.js';
import { execJob } from '../support/exec-jobs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';

// Worker processes are real OS processes, SIGKILLed mid-call (DESIGN.md failure semantics).
const root = fileURLToPath(new URL('../..', import.meta.url));
const LOCK_MS = 2_000;
const STALLED_MS = 1_000;
/** Spawning a worker compiles its TypeScript with tsx: slow on a loaded machine. */
const SPAWN_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 150_000;

let server: TestRedis;
let dir: string;
const children: ChildProcess[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'td-death-'));
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface WorkerProcess {
  id: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

function spawnWorker(prefix: string, id: string): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--conditions=td-source', '--import', 'tsx', 'test/support/worker-proc.ts'], {
    cwd: root,
    env: {
      ...process.env,
      REDIS_URL: server.url,
      TD_PREFIX: prefix,
      WORKER_ID: id,
      LOCK_MS: String(LOCK_MS),
      STALLED_MS: String(STALLED_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${id} not ready in time:\n${output}`)), SPAWN_TIMEOUT_MS);
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes(`ready ${id}`)) {
        clearTimeout(timer);
        resolve({ id, child, exited });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${id} exited with ${code} before it was ready:\n${output}`));
    });
  });
}

async function executor(prefix: string): Promise<QueueExecutor> {
  const e = new QueueExecutor({ redisUrl: server.url, prefix, pollIntervalMs: 200 });
  closers.push(async () => {
    // BullMQ's own queue keys have no TTL: remove them, in case this Redis is shared (REDIS_URL).
    await Promise.all(e.allQueues().map((q) => q.obliterate({ force: true }).catch(() => undefined)));
    await e.close();
  });
  await e.waitUntilReady();
  return e;
}

function job(name: string, args: Record<string, unknown>, queue: ExecJob['queue']): ExecJob {
  return execJob(name, args, { workspace: path.join(dir, 'ws'), queue, timeoutMs: 30_000 });
}

const starts = async (file: string) =>
  (await readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter((l) => l.startsWith('start '))
    .map((l) => Number(l.split(' ')[1]));

async function waitForStart(file: string, count: number): Promise<number[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const pids = await starts(file);
    if (pids.length >= count) return pids;
    if (Date.now() > deadline) throw new Error(`expected ${count} start(s) in ${file}, saw ${pids.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function twoWorkers(prefix: string): Promise<WorkerProcess[]> {
  return Promise.all([spawnWorker(prefix, 'w-one'), spawnWorker(prefix, 'w-two')]);
}

function runningOn(workers: WorkerProcess[], pid: number | undefined): { dead: WorkerProcess; alive: WorkerProcess } {
  const dead = workers.find((w) => w.child.pid === pid);
  const alive = workers.find((w) => w.child.pid !== pid);
  if (!dead || !alive) throw new Error(`no worker process has pid ${pid}`);
  return { dead, alive };
}

describe('when a worker process dies mid-call', () => {
  it(
    'retries a concurrent call once on another worker, which returns the answer',
    async () => {
      const prefix = randomPrefix();
      const workers = await twoWorkers(prefix);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}.log`);
      const outcome = exec.execute(job('test_sleep', { ms: 1_500, file, tag: 'read' }, 'concurrent'), never());
      const [firstPid] = await waitForStart(file, 1);
      const { dead, alive } = runningOn(workers, firstPid);
      dead.child.kill('SIGKILL');
      const result: ExecOutcome = await outcome;
      expect(result).toMatchObject({ status: 'ok', ranOn: alive.id, output: { pid: alive.child.pid, tag: 'read' } });
      expect(await starts(file)).toEqual([dead.child.pid, alive.child.pid]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'ends a serial call worker_lost, outcome unknown, and never runs it again',
    async () => {
      const prefix = randomPrefix();
      const workers = await twoWorkers(prefix);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}.log`);
      const outcome = exec.execute(job('test_side_effect', { ms: 1_500, file, tag: 'write' }, 'serial'), never());
      const [firstPid] = await waitForStart(file, 1);
      const { dead } = runningOn(workers, firstPid);
      dead.child.kill('SIGKILL');
      const result = await outcome;
      expect(result).toMatchObject({ status: 'error', code: 'worker_lost' });
      expect(result.status === 'error' && result.message).toMatch(/outcome is unknown.*not re-run/);
      // The surviving worker keeps checking for stalled jobs; the side effect still happened once only.
      await new Promise((r) => setTimeout(r, 4 * (LOCK_MS + STALLED_MS)));
      expect(await starts(file)).toEqual([firstPid]);
      expect(await exec.workersAlive()).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'ends every serial call a killed worker ran side by side worker_lost, and runs none of them again',
    async () => {
      const prefix = randomPrefix();
      const [only] = await Promise.all([spawnWorker(prefix, 'w-only')]);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}.log`);
      const outcomes = [1, 2, 3].map((n) =>
        exec.execute(
          { ...job('test_side_effect', { ms: 1_500, file, tag: `w${n}` }, 'serial'), run: `r${n}` },
          never(),
        ),
      );
      // One worker with the default serial concurrency runs all three at once.
      await waitForStart(file, 3);
      only?.child.kill('SIGKILL');
      // A second worker finds the three stalled jobs and fails them without running them again.
      await spawnWorker(prefix, 'w-rescuer');
      for (const result of await Promise.all(outcomes)) {
        expect(result).toMatchObject({ status: 'error', code: 'worker_lost' });
        expect(result.status === 'error' && result.message).toMatch(/outcome is unknown.*not re-run/);
      }
      await new Promise((r) => setTimeout(r, 2 * (LOCK_MS + STALLED_MS)));
      expect(await starts(file)).toEqual([only?.child.pid, only?.child.pid, only?.child.pid]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'lets a worker stopped with SIGTERM finish every serial call it runs before it exits',
    async () => {
      const prefix = randomPrefix();
      const [only] = await Promise.all([spawnWorker(prefix, 'w-only')]);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}.log`);
      const outcomes = [1, 2, 3].map((n) =>
        exec.execute({ ...job('test_side_effect', { ms: 800, file, tag: `w${n}` }, 'serial'), run: `r${n}` }, never()),
      );
      await waitForStart(file, 3);
      only?.child.kill('SIGTERM');
      for (const result of await Promise.all(outcomes)) expect(result).toMatchObject({ status: 'ok', ranOn: 'w-only' });
      expect(await only?.exited).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'lets a worker stopped with SIGTERM finish its call before it exits',
    async () => {
      const prefix = randomPrefix();
      const [only] = await Promise.all([spawnWorker(prefix, 'w-only')]);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}.log`);
      const outcome = exec.execute(job('test_side_effect', { ms: 800, file, tag: 'w' }, 'serial'), never());
      await waitForStart(file, 1);
      only?.child.kill('SIGTERM');
      expect(await outcome).toMatchObject({ status: 'ok', ranOn: 'w-only' });
      expect(await only?.exited).toBe(0);
      expect(await exec.workersAlive()).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});

const never = () => new AbortController().signal;
