import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecJob } from '@tool-dispatch/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueExecutor } from '../../packages/coordinator/src/executors/queue/queue-executor.js';
import { startWorker } from '../../packages/worker/src/app/start-worker.js';
import { execJob } from '../support/exec-jobs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { testRegistry } from '../support/test-handlers.js';
import { until } from '../support/until.js';

// TD_JOB_CALLS (DESIGN.md "Fewer queue hops per call"): the concurrent calls admitted in one tick
// share a BullMQ job up to TD_JOB_CALLS, whatever their runs (each run's share within its limit,
// applied before the executor); 1 is one job per call. The jobs are counted in a real Redis; the
// per-call rules are checked with the switch on (16, the default) and off (1).

let server: TestRedis;
let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'td-job-calls-'));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A worker and an executor sending at most `jobCalls` calls per job (undefined: the default). */
async function setUp(jobCalls: number | undefined): Promise<QueueExecutor> {
  const prefix = randomPrefix();
  const w = await startWorker({
    redisUrl: server.url,
    prefix,
    registry: testRegistry(),
    config: { httpAllow: [], searchUrl: undefined },
    concurrency: 16,
    id: 'w-a',
  });
  closers.push(() => w.close());
  const e = new QueueExecutor({
    redisUrl: server.url,
    prefix,
    pollIntervalMs: 200,
    ...(jobCalls === undefined ? {} : { jobCalls }),
  });
  closers.push(async () => {
    await Promise.all(e.allQueues().map((q) => q.obliterate({ force: true }).catch(() => undefined)));
    await e.close();
  });
  await e.waitUntilReady();
  return e;
}

/** `n` calls of one round (indexes 0..n-1), each changed by `over`. */
function roundOf(n: number, over: (i: number) => Partial<ExecJob> = () => ({})): ExecJob[] {
  const first = execJob('test_echo', {}, { workspace: path.join(dir, 'ws') });
  return Array.from({ length: n }, (_, i) => ({ ...first, callId: `c${i}`, callIndex: i, args: { i }, ...over(i) }));
}

const never = () => new AbortController().signal;
const lines = async (file: string) =>
  (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l.length > 0);

/** Every job BullMQ holds of a queue, whatever its state, once `done` of them completed. */
async function jobsOf(exec: QueueExecutor, queue: 'concurrent' | 'serial', done: number) {
  const q = exec.queueOf(queue);
  await until(async () => ((await q.getJobCounts('completed')).completed ?? 0) >= done, {
    what: "((await q.getJobCounts('completed')).completed ?? 0) >= done",
  });
  return q.getJobs(['completed', 'active', 'waiting', 'failed', 'delayed']);
}

describe('TD_JOB_CALLS', () => {
  it.each([
    [undefined, 5, 1],
    [undefined, 16, 1],
    [undefined, 20, 2],
    [5, 7, 2],
    [3, 7, 3],
    [1, 7, 7],
  ])('at %j sends %i concurrent calls admitted together in %i BullMQ job(s)', async (jobCalls, calls, jobs) => {
    const exec = await setUp(jobCalls);
    const outcomes = await Promise.all(roundOf(calls).map((c) => exec.execute(c, never())));
    expect(outcomes.map((o) => o.status === 'ok' && o.output)).toEqual(
      Array.from({ length: calls }, (_, i) => ({ echo: { i }, pid: process.pid })),
    );
    const held = await jobsOf(exec, 'concurrent', jobs);
    expect(held).toHaveLength(jobs);
    // Every call in exactly one job, none beyond the setting.
    const carried = held.flatMap((j) => (j.data.calls as ExecJob[]).map((c) => c.callIndex));
    expect(carried.sort((a, b) => a - b)).toEqual(Array.from({ length: calls }, (_, i) => i));
    for (const j of held) expect((j.data.calls as unknown[]).length).toBeLessThanOrEqual(jobCalls ?? 16);
  });

  it('at the default, still sends each serial call as a job of its own', async () => {
    const exec = await setUp(undefined);
    const calls = roundOf(3, (i) => ({ queue: 'serial', run: `serial-${i}` }));
    const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok']);
    const held = await jobsOf(exec, 'serial', 3);
    expect(held.map((j) => (j.data.calls as unknown[]).length)).toEqual([1, 1, 1]);
  });

  it('at the default, carries the calls of several runs and sessions admitted together in one job', async () => {
    const exec = await setUp(undefined);
    // Three runs (two sessions), each its share of one tick: 5 + 3 + 4 calls.
    const shares: [string, string, number][] = [
      ['s-a', 'r-1', 5],
      ['s-a', 'r-2', 3],
      ['s-b', 'r-1', 4],
    ];
    const calls = shares.flatMap(([session, run, n]) =>
      roundOf(n, (i) => ({ session, run, round: `${session}-${run}-0`, args: { i, session, run } })),
    );
    const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
    expect(outcomes.map((o) => o.status === 'ok' && o.output)).toEqual(
      calls.map((c) => ({ echo: c.args, pid: process.pid })),
    );
    const [job, ...others] = await jobsOf(exec, 'concurrent', 1);
    expect(others).toHaveLength(0);
    const carried = (job?.data.calls ?? []) as ExecJob[];
    // (The job's payload keeps what a worker needs: each call's args and index, not its session or run.)
    expect(carried.map((c) => JSON.stringify(c.args)).sort()).toEqual(calls.map((c) => JSON.stringify(c.args)).sort());
    // Its id names each round's calls (idempotent enqueue), rounds joined by `+`.
    expect(job?.id).toBe('s-a-r-1-0-0.1.2.3.4+s-a-r-2-0-0.1.2+s-b-r-1-0-0.1.2.3');
  });

  it('refuses a jobCalls outside 1..64', () => {
    for (const jobCalls of [0, 65, 1.5])
      expect(() => new QueueExecutor({ redisUrl: server.url, prefix: randomPrefix(), jobCalls })).toThrow(
        /jobCalls must be an integer from 1 to 64/,
      );
  });

  describe.each([
    ['on (default)', undefined],
    ['off (1)', 1],
  ])('with batching %s, the per-call rules', (_label, jobCalls) => {
    it('give each call its own outcome: a failing call never takes a sibling with it', async () => {
      const exec = await setUp(jobCalls);
      const calls = roundOf(5, (i) => (i === 1 ? { name: 'test_fail' } : {}));
      const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
      expect(outcomes.map((o) => (o.status === 'ok' ? 'ok' : o.code))).toEqual([
        'ok',
        'handler_error',
        'ok',
        'ok',
        'ok',
      ]);
    });

    it('end a call past its own deadline `timeout` while its siblings finish ok', async () => {
      const exec = await setUp(jobCalls);
      const file = path.join(dir, `deadline-${jobCalls}.log`);
      const calls = roundOf(3, (i) => ({
        name: 'test_sleep',
        args: { ms: i === 0 ? 5_000 : 300, file, tag: `t${i}` },
        ...(i === 0 ? { timeoutMs: 400 } : {}),
      }));
      const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
      expect(outcomes.map((o) => (o.status === 'ok' ? 'ok' : o.code))).toEqual(['timeout', 'ok', 'ok']);
      await until(async () => (await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith(' t0')), {
        what: "(await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith(' t0'))",
      });
    });

    it('cancel one call alone: it ends cancelled, its handler aborted, its siblings ok', async () => {
      const exec = await setUp(jobCalls);
      const file = path.join(dir, `cancel-${jobCalls}.log`);
      const calls = roundOf(3, (i) => ({
        name: 'test_sleep',
        args: { ms: i === 0 ? 20_000 : 400, file, tag: `t${i}` },
      }));
      const ac = new AbortController();
      const pending = calls.map((c, i) => exec.execute(c, i === 0 ? ac.signal : never()));
      await until(async () => (await lines(file)).filter((l) => l.startsWith('start')).length === 3, {
        what: "(await lines(file)).filter((l) => l.startsWith('start')).length === 3",
      });
      ac.abort();
      const outcomes = await Promise.all(pending);
      expect(outcomes.map((o) => (o.status === 'ok' ? 'ok' : o.code))).toEqual(['cancelled', 'ok', 'ok']);
      await until(async () => (await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith(' t0')), {
        what: "(await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith(' t0'))",
      });
    });

    it('run a serial call alone: never in a job with another call', async () => {
      const exec = await setUp(jobCalls);
      const calls = roundOf(4, (i) => (i === 2 ? { queue: 'serial' } : {}));
      const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
      expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
      const [serial] = await jobsOf(exec, 'serial', 1);
      expect(((serial?.data.calls ?? []) as ExecJob[]).map((c) => c.callIndex)).toEqual([2]);
      const concurrent = await jobsOf(exec, 'concurrent', jobCalls === 1 ? 3 : 1);
      expect(concurrent).toHaveLength(jobCalls === 1 ? 3 : 1);
    });
  });
});
