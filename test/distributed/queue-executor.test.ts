import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecJob } from '@tool-dispatch/shared';
import {
  callIdFor,
  OUTCOME_AFTER_COMMIT_TTL_MS,
  OUTCOME_TTL_MS,
  RUNNING_MARK,
  redisKeys,
} from '@tool-dispatch/shared/redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  QueueExecutor,
  type QueueExecutorOptions,
} from '../../packages/coordinator/src/executors/queue/queue-executor.js';
import type { RunningWorker } from '../../packages/worker/src/app/options.js';
import { startWorker } from '../../packages/worker/src/app/start-worker.js';
import { execJob } from '../support/exec-jobs.js';
import { outcomeAt } from '../support/outcomes.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { testRegistry } from '../support/test-handlers.js';
import { until } from '../support/until.js';

let server: TestRedis;
let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'td-dist-'));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function worker(prefix: string, id: string, concurrency = 4, serialConcurrency?: number): Promise<RunningWorker> {
  const w = await startWorker({
    redisUrl: server.url,
    prefix,
    registry: testRegistry(),
    config: { httpAllow: [], searchUrl: undefined },
    concurrency,
    ...(serialConcurrency === undefined ? {} : { serialConcurrency }),
    id,
  });
  closers.push(() => w.close());
  return w;
}

async function executor(prefix: string, over: Partial<QueueExecutorOptions> = {}): Promise<QueueExecutor> {
  const e = new QueueExecutor({ redisUrl: server.url, prefix, pollIntervalMs: 200, ...over });
  closers.push(async () => {
    // BullMQ's own queue keys have no TTL: remove them, in case this Redis is shared (REDIS_URL).
    await Promise.all(e.allQueues().map((q) => q.obliterate({ force: true }).catch(() => undefined)));
    await e.close();
  });
  await e.waitUntilReady();
  return e;
}

/** One worker (w-a) and an executor on a prefix of their own, and a connection to look at Redis with. */
async function workerAndExecutor() {
  const prefix = randomPrefix();
  await worker(prefix, 'w-a');
  const exec = await executor(prefix);
  const redis = new Redis(server.url);
  closers.push(async () => redis.disconnect());
  return { prefix, exec, redis };
}

function job(name: string, args: Record<string, unknown>, over: Partial<ExecJob> = {}): ExecJob {
  return execJob(name, args, { workspace: path.join(dir, 'ws'), ...over });
}

const never = () => new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lines = async (file: string) =>
  (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l.length > 0);

describe('QueueExecutor with two workers', () => {
  it('runs concurrent calls on the workers and returns each outcome', async () => {
    const prefix = randomPrefix();
    await worker(prefix, 'w-a');
    await worker(prefix, 'w-b');
    const exec = await executor(prefix);
    const jobs = Array.from({ length: 12 }, (_, i) => job('test_echo', { i }));
    const outcomes = await Promise.all(jobs.map((j) => exec.execute(j, never())));
    outcomes.forEach((o, i) => {
      expect(o).toMatchObject({ status: 'ok', output: { echo: { i } } });
      expect(['w-a', 'w-b']).toContain(o.status === 'ok' ? o.ranOn : '');
    });
  });

  it('leaves nothing pending on its results stream, and trims what it read', async () => {
    const { prefix, exec, redis } = await workerAndExecutor();
    const stream = redisKeys(prefix).results(exec.coordinatorId);
    for (let round = 0; round < 3; round++) {
      const outcomes = await Promise.all([0, 1].map((i) => exec.execute(job('test_echo', { i }), never())));
      expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok']);
      await new Promise((r) => setTimeout(r, 600));
    }
    // Read without acks (NOACK): the group's pending list stays empty.
    const [pending] = (await redis.xpending(stream, 'coordinator')) as [number];
    expect(pending).toBe(0);
    // What was read goes with a trim at most a second later: only the newest entry may stay.
    expect(await redis.xlen(stream)).toBeLessThanOrEqual(2);
  });

  it('cuts the outcome keys of a committed round down to minutes, and leaves the others for a day', async () => {
    const { prefix, exec, redis } = await workerAndExecutor();
    const [committed, open] = [job('test_echo', { n: 1 }), job('test_echo', { n: 2 })];
    const outcomes = await Promise.all([committed, open].map((j) => exec.execute(j, never())));
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok']);
    const ttl = (j: ExecJob) => redis.pttl(redisKeys(prefix).outcomes(exec.coordinatorId, j.round));
    expect(await ttl(committed)).toBeGreaterThan(OUTCOME_AFTER_COMMIT_TTL_MS);
    exec.committed(committed.round, [0]);
    await until(async () => (await ttl(committed)) <= OUTCOME_AFTER_COMMIT_TTL_MS, {
      what: '(await ttl(committed)) <= OUTCOME_AFTER_COMMIT_TTL_MS',
    });
    expect(await ttl(committed)).toBeGreaterThan(OUTCOME_AFTER_COMMIT_TTL_MS - 60_000);
    expect(await ttl(open)).toBeGreaterThan(OUTCOME_TTL_MS - 60_000);
    // Another coordinator's namespace (a round taken over): the keys named there are cut.
    const key = redisKeys(prefix).outcomes('c-gone', 'rnd_x');
    await redis.multi().hset(key, '3', '{}').pexpire(key, OUTCOME_TTL_MS).exec();
    exec.committed('rnd_x', [3], 'c-gone');
    await until(async () => (await redis.pttl(key)) <= OUTCOME_AFTER_COMMIT_TTL_MS, {
      what: '(await redis.pttl(key)) <= OUTCOME_AFTER_COMMIT_TTL_MS',
    });
  });

  it('runs serial calls one at a time on a worker whose serial concurrency is 1', async () => {
    const prefix = randomPrefix();
    await worker(prefix, 'w-a', 8, 1);
    const exec = await executor(prefix);
    const file = path.join(dir, `${prefix}-serial.log`);
    const jobs = [1, 2, 3].map((n) => job('test_side_effect', { ms: 150, file, tag: `t${n}` }, { queue: 'serial' }));
    const outcomes = await Promise.all(jobs.map((j) => exec.execute(j, never())));
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok']);
    // Each start follows the previous end: never two at once.
    const events = (await lines(file)).map((l) => l.split(' ')[0]);
    expect(events).toEqual(['start', 'end', 'start', 'end', 'start', 'end']);
  });

  it('runs serial calls of different runs side by side on one worker, up to its serial concurrency', async () => {
    const prefix = randomPrefix();
    await worker(prefix, 'w-a', 4, 3);
    const exec = await executor(prefix);
    const file = path.join(dir, `${prefix}-serial-side.log`);
    const jobs = [1, 2, 3, 4, 5].map((n) =>
      job('test_side_effect', { ms: 400, file, tag: `t${n}` }, { queue: 'serial', run: `run-${n}` }),
    );
    const outcomes = await Promise.all(jobs.map((j) => exec.execute(j, never())));
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    let now = 0;
    let most = 0;
    for (const event of (await lines(file)).map((l) => l.split(' ')[0])) {
      now += event === 'start' ? 1 : -1;
      most = Math.max(most, now);
    }
    expect(most).toBe(3);
  });

  it('defaults to 8 serial calls at once, and announces it', async () => {
    const prefix = randomPrefix();
    await worker(prefix, 'w-a');
    const exec = await executor(prefix);
    const [announced] = await exec.liveWorkers();
    expect(announced).toMatchObject({ id: 'w-a', concurrency: 4, serialConcurrency: 8 });
    const file = path.join(dir, `${prefix}-serial-default.log`);
    const jobs = Array.from({ length: 8 }, (_, n) =>
      job('test_side_effect', { ms: 600, file, tag: `t${n}` }, { queue: 'serial', run: `run-${n}` }),
    );
    const outcomes = await Promise.all(jobs.map((j) => exec.execute(j, never())));
    expect(outcomes.every((o) => o.status === 'ok')).toBe(true);
    const events = (await lines(file)).map((l) => l.split(' ')[0]);
    // All eight started before the first ended.
    expect(events.slice(0, 8)).toEqual(Array(8).fill('start'));
  });

  it('reports a handler that throws as handler_error', async () => {
    const prefix = randomPrefix();
    await worker(prefix, 'w-a');
    const exec = await executor(prefix);
    expect(await exec.execute(job('test_fail', {}), never())).toMatchObject({
      status: 'error',
      code: 'handler_error',
      message: expect.stringContaining('failed on purpose'),
      ranOn: 'w-a',
    });
  });

  it('knows the handlers and the number of live workers', async () => {
    const prefix = randomPrefix();
    const a = await worker(prefix, 'w-a');
    await worker(prefix, 'w-b');
    const exec = await executor(prefix, { handlerCacheMs: 0 });
    expect(await exec.workersAlive()).toBe(2);
    const names = await exec.handlerNames();
    for (const n of ['test_echo', 'test_sleep', 'test_side_effect', 'test_fail']) expect(names.has(n)).toBe(true);
    await a.close();
    expect(await exec.workersAlive()).toBe(1);
  });

  it('answers the handler set it knows while it reads a fresh one, and waits once that set is too old', async () => {
    const prefix = randomPrefix();
    const a = await worker(prefix, 'w-a');
    const exec = await executor(prefix, { handlerCacheMs: 300 });
    expect((await exec.handlerNames()).has('test_echo')).toBe(true);
    await a.close(); // leaves: its announcement is gone at once
    await sleep(400);
    // Stale (older than 300 ms, younger than 600 ms): answered at once, refreshed behind it.
    expect((await exec.handlerNames()).has('test_echo')).toBe(true);
    await until(async () => (await exec.handlerNames()).size === 0, { what: '(await exec.handlerNames()).size === 0' });
    // Too old (past twice the period): the next call waits for a fresh read.
    await worker(prefix, 'w-b');
    await sleep(700);
    expect((await exec.handlerNames()).has('test_echo')).toBe(true);
  });

  it('knows no handlers when no worker is alive', async () => {
    const exec = await executor(randomPrefix(), { handlerCacheMs: 0 });
    expect(await exec.workersAlive()).toBe(0);
    expect((await exec.handlerNames()).size).toBe(0);
  });

  describe('when a call is cancelled', () => {
    it('aborts the running handler on its worker and answers cancelled at once', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-cancel.log`);
      const ac = new AbortController();
      const pending = exec.execute(job('test_sleep', { ms: 20_000, file }), ac.signal);
      await until(async () => (await lines(file)).length === 1, { what: '(await lines(file)).length === 1' });
      const t0 = Date.now();
      ac.abort();
      expect(await pending).toMatchObject({ status: 'error', code: 'cancelled' });
      // Not waiting for the handler's own end: it is stopped (its file says so), never finished.
      await until(async () => (await lines(file)).some((l) => l.startsWith('aborted')), {
        what: "(await lines(file)).some((l) => l.startsWith('aborted'))",
      });
      expect(Date.now() - t0, 'answered long before the 20 s sleep would end').toBeLessThan(10_000);
      expect((await lines(file)).some((l) => l.startsWith('end '))).toBe(false);
    });

    it('aborts only the cancelled one of serial calls running side by side on a worker', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-cancel-side.log`);
      const ac = new AbortController();
      const run = (tag: string, signal: AbortSignal) =>
        exec.execute(job('test_side_effect', { ms: 1_000, file, tag }, { queue: 'serial', run: `run-${tag}` }), signal);
      const [kept, cancelled, alsoKept] = [run('kept', never()), run('cancelled', ac.signal), run('also', never())];
      await until(async () => (await lines(file)).filter((l) => l.startsWith('start')).length === 3, {
        what: "(await lines(file)).filter((l) => l.startsWith('start')).length === 3",
      });
      ac.abort();
      expect(await cancelled).toMatchObject({ status: 'error', code: 'cancelled' });
      expect(await kept).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      expect(await alsoKept).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      const ended = (await lines(file)).filter((l) => !l.startsWith('start')).map((l) => l.split(' ').slice(0, 3));
      expect(ended.map(([event, , tag]) => `${event} ${tag}`).sort()).toEqual([
        'aborted cancelled',
        'end also',
        'end kept',
      ]);
    });

    it('lets every serial call running on a closing worker finish and report', async () => {
      const prefix = randomPrefix();
      const w = await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-drain-side.log`);
      const runs = [1, 2, 3].map((n) =>
        exec.execute(
          job('test_side_effect', { ms: 600, file, tag: `t${n}` }, { queue: 'serial', run: `run-${n}` }),
          never(),
        ),
      );
      await until(async () => (await lines(file)).filter((l) => l.startsWith('start')).length === 3, {
        what: "(await lines(file)).filter((l) => l.startsWith('start')).length === 3",
      });
      await w.close();
      for (const outcome of await Promise.all(runs)) expect(outcome).toMatchObject({ status: 'ok', ranOn: 'w-a' });
    });

    it('removes a call still waiting in the queue, so it never runs', async () => {
      const prefix = randomPrefix();
      // Serial concurrency 1: the second call waits in the queue behind the first.
      await worker(prefix, 'w-a', 4, 1);
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-waiting.log`);
      const busy = exec.execute(job('test_side_effect', { ms: 800, file, tag: 'first' }, { queue: 'serial' }), never());
      await until(async () => (await lines(file)).length === 1, { what: '(await lines(file)).length === 1' });
      const ac = new AbortController();
      const queued = exec.execute(
        job('test_side_effect', { ms: 10, file, tag: 'second' }, { queue: 'serial' }),
        ac.signal,
      );
      await new Promise((r) => setTimeout(r, 100));
      ac.abort();
      expect(await queued).toMatchObject({ status: 'error', code: 'cancelled' });
      expect((await busy).status).toBe('ok');
      await new Promise((r) => setTimeout(r, 300));
      expect((await lines(file)).filter((l) => l.includes('second'))).toEqual([]);
    });

    it('answers cancelled without enqueueing when the signal is already aborted', async () => {
      const exec = await executor(randomPrefix());
      const ac = new AbortController();
      ac.abort();
      expect(await exec.execute(job('test_echo', {}), ac.signal)).toMatchObject({ status: 'error', code: 'cancelled' });
    });
  });

  describe('idempotent enqueue', () => {
    it('runs a call once when two coordinators enqueue the same round and call index', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      await worker(prefix, 'w-b');
      const first = await executor(prefix, { coordinatorId: 'c-one' });
      const second = await executor(prefix, { coordinatorId: 'c-two' });
      const file = path.join(dir, `${prefix}-idem.log`);
      const j = job('test_sleep', { ms: 300, file });
      const [a, b] = await Promise.all([first.execute(j, never()), second.execute(j, never())]);
      expect(a).toEqual(b);
      expect(a.status).toBe('ok');
      const again = await first.execute(j, never());
      expect(again).toEqual(a);
      expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(1);
    });
  });

  describe('when calls of one round are admitted together', () => {
    const roundOf = (n: number, over: (i: number) => Partial<ExecJob> = () => ({})) => {
      const first = job('test_echo', {});
      return Array.from({ length: n }, (_, i) => ({ ...first, callId: `c${i}`, callIndex: i, ...over(i) }));
    };

    it('carries them in one BullMQ job, each with its own outcome', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const calls = roundOf(4, (i) => (i === 2 ? { name: 'test_fail' } : { args: { i } }));
      const outcomes = await Promise.all(calls.map((c) => exec.execute(c, never())));
      expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'error', 'ok']);
      expect(outcomes[3]).toMatchObject({ output: { echo: { i: 3 } } });
      expect(outcomes[2]).toMatchObject({ code: 'handler_error' });
      // Reported before BullMQ marks the job complete: wait for that, then count every job.
      const q = exec.queueOf('concurrent');
      await until(async () => (await q.getJobCounts('completed')).completed === 1, {
        what: "(await q.getJobCounts('completed')).completed === 1",
      });
      const counts = await q.getJobCounts('completed', 'active', 'waiting', 'failed', 'delayed');
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(1);
    });

    it('carries the calls of several rounds of one run admitted in one tick in one job, named after them all', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const a = roundOf(2, (i) => ({ args: { a: i } }));
      const b = roundOf(3, (i) => ({ args: { b: i } }));
      const outcomes = await Promise.all([...a, ...b].map((c) => exec.execute(c, never())));
      expect(outcomes.map((o) => o.status === 'ok' && (o.output as { echo: unknown }).echo)).toEqual([
        { a: 0 },
        { a: 1 },
        { b: 0 },
        { b: 1 },
        { b: 2 },
      ]);
      const q = exec.queueOf('concurrent');
      await until(async () => (await q.getJobCounts('completed')).completed === 1, {
        what: "(await q.getJobCounts('completed')).completed === 1",
      });
      const [done] = await q.getJobs(['completed']);
      expect(done?.id).toBe(`${a[0]?.round}-0.1+${b[0]?.round}-0.1.2`);
      // Named after its tools by default (TD_JOB_NAME `{tools}`).
      expect(done?.name).toBe('test_echo');
    });

    it('carries the calls of several runs admitted together in one job (DESIGN.md, corrected for v1.3)', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const a = roundOf(2, (i) => ({ args: { a: i } }));
      const b = roundOf(3, (i) => ({ args: { b: i }, session: 's2', run: 'r9' }));
      const c = roundOf(1, () => ({ args: { c: 0 }, run: 'r2' }));
      const outcomes = await Promise.all([...a, ...b, ...c].map((call) => exec.execute(call, never())));
      expect(outcomes.every((o) => o.status === 'ok')).toBe(true);
      const q = exec.queueOf('concurrent');
      await until(async () => (await q.getJobCounts('completed')).completed === 1, {
        what: "(await q.getJobCounts('completed')).completed === 1",
      });
      const ids = (await q.getJobs(['completed'])).map((j) => j.id);
      // One job, its id naming each round's calls in the order they joined.
      expect(ids).toEqual([`${a[0]?.round}-0.1+${b[0]?.round}-0.1.2+${c[0]?.round}-0`]);
    });

    it('names each job from TD_JOB_NAME’s template (session, run, round, queue, tools), as the dashboard shows it', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix, { jobName: '{queue}:{session}/{run} {tools}' });
      const calls = roundOf(2, (i) => (i === 1 ? { name: 'test_fail' } : { args: { n: 1 } }));
      await Promise.all(calls.map((c) => exec.execute(c, never())));
      const q = exec.queueOf('concurrent');
      await until(async () => (await q.getJobCounts('completed')).completed === 1, {
        what: "(await q.getJobCounts('completed')).completed === 1",
      });
      const [done] = await q.getJobs(['completed']);
      expect(done?.name).toBe(`concurrent:${calls[0]?.session}/${calls[0]?.run} test_echo+test_fail`);
    });

    it('cancels one call without its siblings', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-batch-cancel.log`);
      const calls = roundOf(2, (i) => ({
        name: 'test_sleep',
        args: { ms: i === 0 ? 20_000 : 300, file, tag: `t${i}` },
      }));
      const ac = new AbortController();
      const pending = [exec.execute(calls[0] as ExecJob, ac.signal), exec.execute(calls[1] as ExecJob, never())];
      await until(async () => (await lines(file)).filter((l) => l.startsWith('start')).length === 2, {
        what: "(await lines(file)).filter((l) => l.startsWith('start')).length === 2",
      });
      ac.abort();
      const [cancelled, sibling] = await Promise.all(pending);
      expect(cancelled).toMatchObject({ status: 'error', code: 'cancelled' });
      expect(sibling).toMatchObject({ status: 'ok', output: { tag: 't1' } });
      await until(async () => (await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith('t0')), {
        what: "(await lines(file)).some((l) => l.startsWith('aborted') && l.endsWith('t0'))",
      });
    });

    it('runs a call once when another job carries it too (calls grouped differently after a takeover)', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      await worker(prefix, 'w-b');
      const first = await executor(prefix, { coordinatorId: 'c-one' });
      const second = await executor(prefix, { coordinatorId: 'c-two' });
      const file = path.join(dir, `${prefix}-regrouped.log`);
      const calls = roundOf(2, (i) => ({ name: 'test_sleep', args: { ms: 300, file, tag: `t${i}` } }));
      const [a0, a1, b0] = await Promise.all([
        first.execute(calls[0] as ExecJob, never()),
        first.execute(calls[1] as ExecJob, never()),
        // The taking-over coordinator names the round's first one, whose namespace holds the outcomes.
        second.execute({ ...(calls[0] as ExecJob), origin: 'c-one' }, never()),
      ]);
      expect(a1).toMatchObject({ status: 'ok', output: { tag: 't1' } });
      expect(a0).toMatchObject({ status: 'ok', output: { tag: 't0' } });
      expect(b0).toEqual(a0);
      await new Promise((r) => setTimeout(r, 300));
      expect((await lines(file)).filter((l) => l.startsWith('start') && l.includes(' t0 '))).toHaveLength(1);
    });

    it('answers a call with an outcome recorded before without running it again', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const exec = await executor(prefix);
      const file = path.join(dir, `${prefix}-recorded.log`);
      const j = job('test_sleep', { ms: 10, file });
      const first = await exec.execute(j, never());
      // The finished job leaves BullMQ (as after its retention); the outcome stays.
      await exec.queueOf('concurrent').clean(0, 100, 'completed');
      const again = await (await executor(prefix)).execute({ ...j, origin: exec.coordinatorId }, never());
      expect(again).toEqual(first);
      expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(1);
    });
  });

  describe('when a coordinator carries on a round another one enqueued (origin)', () => {
    it("records the outcome in the original coordinator's namespace and answers the new one", async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const second = await executor(prefix, { coordinatorId: 'c-two' });
      const file = path.join(dir, `${prefix}-origin.log`);
      const j = job('test_sleep', { ms: 10, file }, { origin: 'c-one' });
      const outcome = await second.execute(j, never());
      expect(outcome).toMatchObject({ status: 'ok' });
      const redis = new Redis(server.url);
      closers.push(async () => redis.disconnect());
      const stored = await outcomeAt(redis, redisKeys(prefix), 'c-one', `${j.round}-0`).get();
      expect(JSON.parse(stored ?? 'null')).toEqual(outcome);
      expect(await redis.exists(redisKeys(prefix).outcomes('c-two', j.round))).toBe(0);
    });

    it('runs a concurrent call whose field holds the mark of a job whose add failed (the mark went through)', async () => {
      // The first coordinator marked the call as carried by a job that mixed it with another round's
      // call, and the add of that job timed out (its Redis primary away): no such job exists. The
      // round carried on (resumed or taken over) travels in a job of its own, whose start check
      // must take the call over, not leave it to the job that never was.
      const prefix = randomPrefix();
      await worker(prefix, 'w-a');
      const second = await executor(prefix, { coordinatorId: 'c-two', overdueGraceMs: 100 });
      const file = path.join(dir, `${prefix}-stale-mark.log`);
      const j = job('test_side_effect', { ms: 10, file, tag: 'stale' }, { origin: 'c-one', timeoutMs: 1_000 });
      const redis = new Redis(server.url);
      closers.push(async () => redis.disconnect());
      const field = outcomeAt(redis, redisKeys(prefix), 'c-one', callIdFor(j.round, j.callIndex));
      await field.set(`${RUNNING_MARK}${callIdFor(j.round, j.callIndex)}+rnd_other-0`);
      const outcome = await second.execute(j, never());
      expect(outcome).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(1);
      expect(JSON.parse((await field.get()) ?? 'null')).toEqual(outcome);
    });

    it('does not run a call the original coordinator cancelled before it started', async () => {
      const prefix = randomPrefix();
      await worker(prefix, 'w-a', 4, 1);
      const first = await executor(prefix, { coordinatorId: 'c-one' });
      const second = await executor(prefix, { coordinatorId: 'c-two' });
      const file = path.join(dir, `${prefix}-origin-cancel.log`);
      const busy = first.execute(job('test_side_effect', { ms: 800, file, tag: 'busy' }, { queue: 'serial' }), never());
      await until(async () => (await lines(file)).length === 1, { what: '(await lines(file)).length === 1' });
      const ac = new AbortController();
      const cancelled = job('test_side_effect', { ms: 10, file, tag: 'cancelled' }, { queue: 'serial' });
      const waiting = first.execute(cancelled, ac.signal);
      await new Promise((r) => setTimeout(r, 100));
      ac.abort();
      expect(await waiting).toMatchObject({ code: 'cancelled' });
      await until(async () => (await first.queueOf('serial').getJob(`${cancelled.round}-0`)) === undefined, {
        what: 'the cancelled call’s job gone from the serial queue',
      });
      // The round is carried on elsewhere: the call is enqueued again, and its cancel mark still stands.
      const again = await second.execute({ ...cancelled, origin: 'c-one' }, never());
      expect(again).toMatchObject({ status: 'error', code: 'cancelled' });
      expect((await busy).status).toBe('ok');
      expect((await lines(file)).filter((l) => l.includes('cancelled'))).toEqual([]);
    });
  });

  describe('when Redis loses a job (a failover to a replica that never had it)', () => {
    // The job is enqueued with no worker running, then removed from the queue as a failover to a
    // replica that never received it would; the worker starts after that.
    async function lostJob(over: Partial<QueueExecutorOptions>, call: Partial<ExecJob>, mark?: (id: string) => string) {
      const prefix = randomPrefix();
      const exec = await executor(prefix, over);
      const file = path.join(dir, `${prefix}-lost.log`);
      const sent = job('test_side_effect', { ms: 10, file, tag: 'lost' }, call);
      const outcome = exec.execute(sent, never());
      const queue = exec.queueOf(sent.queue);
      const id = callIdFor(sent.round, sent.callIndex);
      await until(async () => (await queue.getJob(id)) !== undefined, {
        what: '(await queue.getJob(id)) !== undefined',
      });
      const redis = new Redis(server.url);
      closers.push(async () => redis.disconnect());
      if (mark) await outcomeAt(redis, redisKeys(prefix), exec.coordinatorId, id).set(mark(id));
      expect(await queue.remove(id)).toBe(1);
      await worker(prefix, 'w-a');
      return { outcome, file };
    }

    it('enqueues again a side effect that never started, and it runs once (TD_REDIS_REPLICA_ACKS ≥ 1)', async () => {
      const { outcome, file } = await lostJob({ resendLostJobs: true }, { queue: 'serial' });
      expect(await outcome).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(1);
    });

    it('enqueues again a concurrent call carried by the lost job, once', async () => {
      const { outcome, file } = await lostJob({ resendLostJobs: true }, { queue: 'concurrent' });
      expect(await outcome).toMatchObject({ status: 'ok', ranOn: 'w-a' });
      expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(1);
    });

    it('ends a side effect whose acknowledged start survived worker_lost, and never runs it', async () => {
      const { outcome, file } = await lostJob(
        { resendLostJobs: true, overdueGraceMs: 100 },
        { queue: 'serial', timeoutMs: 300 },
        (id) => RUNNING_MARK + id,
      );
      expect(await outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
      expect(await lines(file)).toEqual([]);
    });

    it('without replica acks (the default) never enqueues it again: worker_lost once the deadlines passed', async () => {
      const { outcome, file } = await lostJob({ overdueGraceMs: 100 }, { queue: 'serial', timeoutMs: 300 });
      expect(await outcome).toMatchObject({ status: 'error', code: 'worker_lost' });
      expect(await lines(file)).toEqual([]);
    });
  });

  it('times a call out when no worker takes it before its deadline', async () => {
    const exec = await executor(randomPrefix(), { overdueGraceMs: 200 });
    const outcome = await exec.execute(job('test_echo', {}, { timeoutMs: 300 }), never());
    expect(outcome).toMatchObject({ status: 'error', code: 'timeout', message: expect.stringContaining('no worker') });
  });
});
