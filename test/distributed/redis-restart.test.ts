import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueExecutor } from '../../packages/coordinator/src/executors/queue/queue-executor.js';
import type { ExecJob } from '../../packages/shared/src/index.js';
import { startWorker } from '../../packages/worker/src/app/start-worker.js';
import { execJob } from '../support/exec-jobs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { testRegistry } from '../support/test-handlers.js';
import { until } from '../support/until.js';

let server: TestRedis;
let dir: string;

beforeAll(async () => {
  server = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'td-restart-'));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

function job(
  name: string,
  args: Record<string, unknown>,
  queue: ExecJob['queue'] = 'concurrent',
  timeoutMs = 10_000,
): ExecJob {
  return execJob(name, args, { workspace: path.join(dir, 'ws'), queue, timeoutMs });
}

const never = () => new AbortController().signal;

describe('when Redis restarts (empty: no persistence)', () => {
  it('finishes the call in flight and runs new calls once reconnected', async (ctx) => {
    const { kill, restart } = server;
    if (!kill || !restart) ctx.skip(`the Redis from ${server.source} cannot be restarted by the test`);
    const prefix = randomPrefix();
    const errors: string[] = [];
    const worker = await startWorker({
      redisUrl: server.url,
      prefix,
      registry: testRegistry(),
      config: { httpAllow: [], searchUrl: undefined },
      concurrency: 4,
      id: 'w-a',
      heartbeatMs: 300,
      onError: (e) => errors.push(e.message),
    });
    const exec = new QueueExecutor({ redisUrl: server.url, prefix, pollIntervalMs: 200, handlerCacheMs: 0 });
    try {
      await exec.waitUntilReady();
      const file = path.join(dir, `${prefix}.log`);
      const inFlight = exec.execute(job('test_sleep', { ms: 1_500, file }), never());
      await until(async () => (await readFile(file, 'utf8').catch(() => '')).startsWith('start'), {
        what: "(await readFile(file, 'utf8').catch(() => '')).startsWith('start')",
      });
      await kill?.();
      await new Promise((r) => setTimeout(r, 300));
      await restart?.();

      // The worker reports into the fresh Redis; the coordinator re-creates its consumer group and reads it.
      expect(await inFlight).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      expect(await exec.execute(job('test_echo', { n: 1 }), never())).toMatchObject({
        status: 'ok',
        output: { echo: { n: 1 } },
      });
      expect(await exec.execute(job('test_side_effect', { ms: 10 }, 'serial'), never())).toMatchObject({
        status: 'ok',
      });
      await until(async () => (await exec.workersAlive()) === 1, { what: '(await exec.workersAlive()) === 1' });
      expect((await exec.handlerNames()).has('test_echo')).toBe(true);
    } finally {
      await exec.close();
      await worker.close();
    }
  }, 60_000);

  it('ends a call that was still queued worker_lost, saying its outcome is unknown', async (ctx) => {
    const { kill, restart } = server;
    if (!kill || !restart) ctx.skip(`the Redis from ${server.source} cannot be restarted by the test`);
    const prefix = randomPrefix();
    const worker = await startWorker({
      redisUrl: server.url,
      prefix,
      registry: testRegistry(),
      config: { httpAllow: [], searchUrl: undefined },
      concurrency: 4,
      // One serial call at a time: the second waits in the queue while Redis goes away.
      serialConcurrency: 1,
      id: 'w-a',
    });
    const exec = new QueueExecutor({ redisUrl: server.url, prefix, pollIntervalMs: 200, overdueGraceMs: 300 });
    try {
      await exec.waitUntilReady();
      const file = path.join(dir, `${prefix}.log`);
      const running = exec.execute(job('test_side_effect', { ms: 1_500, file, tag: 'a' }, 'serial'), never());
      await until(async () => (await readFile(file, 'utf8').catch(() => '')).startsWith('start'), {
        what: "(await readFile(file, 'utf8').catch(() => '')).startsWith('start')",
      });
      const queued = exec.execute(job('test_side_effect', { ms: 10, file, tag: 'b' }, 'serial', 1_000), never());
      await new Promise((r) => setTimeout(r, 200));
      await kill?.();
      await restart?.();
      expect(await running).toMatchObject({ status: 'ok' });
      const lost = await queued;
      expect(lost).toMatchObject({ status: 'error', code: 'worker_lost' });
      expect(lost.status === 'error' && lost.message).toMatch(/disappeared from the queue.*outcome is unknown/);
      expect(await readFile(file, 'utf8')).not.toContain(' b ');
    } finally {
      await exec.close();
      await worker.close();
    }
  }, 60_000);
});
