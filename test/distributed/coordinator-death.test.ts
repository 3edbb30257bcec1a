import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses, killGroup } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// DESIGN.md distributed shape: "A round's progress is stored so that another coordinator can
// finish a round whose coordinator died", and a retry with the same Idempotency-Key gets the
// round's results from any coordinator with no call run twice. Real processes, real SIGKILL.
let redis: TestRedis;
let workspaces: string;
const cli = new CliProcesses();
const start = (args: string[], env: Record<string, string>, waitFor: RegExp) => cli.start(args, env, waitFor);

beforeAll(async () => {
  redis = await startRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-coord-death-'));
}, 60_000);

afterAll(async () => {
  cli.killAll('SIGKILL');
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

describe('when a coordinator dies mid-round', () => {
  it('lets another coordinator finish the round: each call runs at most once and is committed once', async () => {
    const env = { REDIS_URL: redis.url, TD_PREFIX: randomPrefix(), TD_WORKSPACE_ROOT: workspaces };
    await Promise.all([start(['worker'], env, /consuming/), start(['worker'], env, /consuming/)]);
    const [a, b] = await Promise.all([
      start(['coordinator', '--host', '127.0.0.1'], env, /listening on/),
      start(['coordinator', '--host', '127.0.0.1'], env, /listening on/),
    ]);
    if (!a || !b) throw new Error('coordinators did not start');
    await until(async () => (await api(a.port, 'GET', '/readyz')).status === 200, {
      timeoutMs: 20_000,
      what: 'coordinator ready',
    });

    const session = `death-${Date.now()}`;
    expect(
      (await api(a.port, 'PUT', `/v1/sessions/${session}`, { provider: 'openai', autoApprove: 'all' })).status,
    ).toBe(200);
    const setup = await api(a.port, 'POST', `/v1/sessions/${session}/runs/setup/rounds`, {
      calls: [{ id: 'f', name: 'find_tools', args: { names: ['run_command', 'read_files'] } }],
    });
    expect(setup.status).toBe(200);

    const calls = [
      {
        id: 'cmd',
        name: 'run_tool',
        args: { name: 'run_command', args: { command: 'echo ran >> count.txt; sleep 3' } },
      },
      { id: 'read', name: 'run_tool', args: { name: 'read_files', args: { paths: ['count.txt'] } } },
    ];
    const key = { 'idempotency-key': 'retry-1' };
    const lost = api(a.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key).catch(() => null);
    const counter = path.join(workspaces, 'default', session, 'count.txt');
    await until(() => readFile(counter, 'utf8'), { timeoutMs: 30_000, what: 'the command started on a worker' });
    killGroup(a, 'SIGKILL');
    await lost;

    // The client retries on the other coordinator with the same key.
    const retried = await api(b.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key);
    expect(retried.status).toBe(200);
    const results = retried.json?.results as Array<{
      id: string;
      status: string;
      output?: { files?: Array<{ content: string }> };
    }>;
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['cmd', 'ok'],
      ['read', 'ok'],
    ]);
    expect(results[1]?.output?.files?.[0]?.content).toBe('ran\n');
    expect(await readFile(counter, 'utf8')).toBe('ran\n');
    expect(b.output.join('')).toMatch(/taking over round/);

    const history = (await api(b.port, 'GET', `/v1/sessions/${session}/history`)).json?.results as Array<{
      id: string;
    }>;
    expect(history.filter((e) => e.id === 'cmd')).toHaveLength(1);
    expect(history.filter((e) => e.id === 'read')).toHaveLength(1);
  }, 120_000);
});
