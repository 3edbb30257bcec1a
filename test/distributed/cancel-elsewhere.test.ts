import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses, type Proc } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// API.md "DELETE /v1/sessions/{session}/runs/{run}": the run's running, awaiting-approval and
// parked calls end cancelled, whichever coordinator the DELETE reaches. Real processes: two
// coordinators and a worker on one Redis; the round runs on one, the DELETE goes to the other.
let redis: TestRedis;
let workspaces: string;
let a: Proc;
let b: Proc;
const cli = new CliProcesses();

beforeAll(async () => {
  redis = await startRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-cancel-elsewhere-'));
  const env = { REDIS_URL: redis.url, TD_PREFIX: randomPrefix(), TD_WORKSPACE_ROOT: workspaces };
  await cli.start(['worker'], env, /consuming/);
  [a, b] = await Promise.all([cli.startCoordinator(env), cli.startCoordinator(env)]);
}, 120_000);

afterAll(async () => {
  cli.killAll('SIGKILL');
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

async function session(name: string, body: Record<string, unknown>) {
  const id = `${name}-${Date.now()}`;
  expect((await api(a.port, 'PUT', `/v1/sessions/${id}`, { provider: 'claude-code', ...body })).status).toBe(200);
  // The schemas shown first (claude-code defers them), so the calls below run rather than answer `schema`.
  const setup = await api(a.port, 'POST', `/v1/sessions/${id}/runs/setup/rounds`, {
    calls: [{ id: 'f', name: 'find_tools', args: { names: ['run_command', 'read_files'] } }],
  });
  expect(setup.status).toBe(200);
  return id;
}

describe('when a run is cancelled through a coordinator other than the one running its round', () => {
  it('ends the running command cancelled and answers the count', async () => {
    const s = await session('cancel-run', { autoApprove: 'all' });
    const started = Date.now();
    const round = api(a.port, 'POST', `/v1/sessions/${s}/runs/r1/rounds`, {
      calls: [
        { id: 'cmd', name: 'run_command', args: { command: 'echo started > started.txt; sleep 20' } },
        { id: 'after', name: 'run_command', args: { command: 'echo never' } },
      ],
    });
    await until(
      async () =>
        // A run per peek: in one run, a read made before the command wrote the file is deduped.
        (
          await api(b.port, 'POST', `/v1/sessions/${s}/runs/peek-${Date.now()}/rounds`, {
            calls: [{ id: 'p', name: 'read_files', args: { paths: ['started.txt'] } }],
          })
        ).json?.results?.[0]?.output?.files?.[0]?.content === 'started\n',
      { timeoutMs: 20_000, what: 'the command started' },
    );
    const cancelled = await api(b.port, 'DELETE', `/v1/sessions/${s}/runs/r1`);
    expect(cancelled).toMatchObject({ status: 200, json: { cancelled: 2 } });
    const answer = await round;
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(
      answer.json.results.map((r: { status: string; error?: { code: string } }) => [r.status, r.error?.code]),
    ).toEqual([
      ['error', 'cancelled'],
      ['error', 'cancelled'],
    ]);
  }, 60_000);

  it('ends a parked client-tool call and a call awaiting approval cancelled', async () => {
    const s = await session('cancel-parked', {
      clientTools: [{ name: 'pick_file', description: 'the client picks a file', parameters: { type: 'object' } }],
    });
    const parkedRound = api(a.port, 'POST', `/v1/sessions/${s}/runs/r1/rounds`, {
      calls: [{ id: 'pick', name: 'pick_file', args: {} }],
    });
    const gatedRound = api(a.port, 'POST', `/v1/sessions/${s}/runs/r2/rounds`, {
      calls: [{ id: 'cmd', name: 'run_command', args: { command: 'echo hi' } }],
    });
    await until(async () => (await api(b.port, 'GET', `/v1/sessions/${s}/inputs`)).json?.inputs?.[0], {
      timeoutMs: 20_000,
      what: 'parked',
    });
    await until(async () => (await api(b.port, 'GET', `/v1/sessions/${s}/confirmations`)).json?.confirmations?.[0], {
      timeoutMs: 20_000,
      what: 'awaiting approval',
    });
    expect(await api(b.port, 'DELETE', `/v1/sessions/${s}/runs/r1`)).toMatchObject({ json: { cancelled: 1 } });
    expect(await api(b.port, 'DELETE', `/v1/sessions/${s}/runs/r2`)).toMatchObject({ json: { cancelled: 1 } });
    for (const round of [await parkedRound, await gatedRound]) {
      expect(round.json.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    }
    expect((await api(b.port, 'GET', `/v1/sessions/${s}/inputs`)).json.inputs).toEqual([]);
    expect((await api(b.port, 'GET', `/v1/sessions/${s}/confirmations`)).json.confirmations).toEqual([]);
  }, 60_000);

  it('answers 0 for a run nobody is running, without waiting long', async () => {
    const s = await session('cancel-none', {});
    const t0 = Date.now();
    expect(await api(b.port, 'DELETE', `/v1/sessions/${s}/runs/idle`)).toMatchObject({
      status: 200,
      json: { cancelled: 0 },
    });
    expect(Date.now() - t0).toBeLessThan(2_000);
  }, 30_000);
});
