import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses, killGroup } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// API.md "Parked calls": a coordinator that dies while a call is parked loses nothing; the round
// is taken over, and the answer, posted to any coordinator, completes it. Real processes, a real
// SIGKILL, then the client's retry under the round's Idempotency-Key on the other coordinator.
let redis: TestRedis;
let workspaces: string;
const cli = new CliProcesses();
const start = (args: string[], env: Record<string, string>, waitFor: RegExp) => cli.start(args, env, waitFor);

beforeAll(async () => {
  redis = await startRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-parked-takeover-'));
}, 60_000);

afterAll(async () => {
  cli.killAll('SIGKILL');
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

describe('when a coordinator dies while a call is parked', () => {
  it('keeps the call parked; the answer posted to the other coordinator completes the round its Idempotency-Key retry gets', async () => {
    const env = { REDIS_URL: redis.url, TD_PREFIX: randomPrefix(), TD_WORKSPACE_ROOT: workspaces };
    await start(['worker'], env, /consuming/);
    const [a, b] = await Promise.all([
      start(['coordinator', '--host', '127.0.0.1'], env, /listening on/),
      start(['coordinator', '--host', '127.0.0.1'], env, /listening on/),
    ]);
    if (!a || !b) throw new Error('coordinators did not start');
    await until(async () => (await api(a.port, 'GET', '/readyz')).status === 200, {
      timeoutMs: 20_000,
      what: 'coordinator ready',
    });

    const session = `parked-death-${Date.now()}`;
    const put = await api(a.port, 'PUT', `/v1/sessions/${session}`, { provider: 'claude-code', autoApprove: 'all' });
    expect(put.status).toBe(200);
    const setup = await api(a.port, 'POST', `/v1/sessions/${session}/runs/setup/rounds`, {
      calls: [{ id: 'f', name: 'find_tools', args: { names: ['ask_user', 'run_command'] } }],
    });
    expect(setup.status).toBe(200);

    const calls = [
      { id: 'ask', name: 'ask_user', args: { question: 'Deploy now?', choices: ['yes', 'no'] } },
      { id: 'then', name: 'ask_user', args: { question: 'Tell the team?' } },
      { id: 'cmd', name: 'run_command', args: { command: 'echo deployed >> deploys.txt; cat deploys.txt' } },
    ];
    const key = { 'idempotency-key': 'parked-retry-1' };
    const lost = api(a.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key).catch(() => null);
    const parked = await until(
      async () => (await api(b.port, 'GET', `/v1/sessions/${session}/inputs`)).json?.inputs?.[0],
      { timeoutMs: 20_000, what: 'the ask_user call parked (seen from the other coordinator)' },
    );
    expect(parked).toMatchObject({ kind: 'interactive', callId: 'ask', name: 'ask_user', run: 'r1' });
    killGroup(a, 'SIGKILL');
    await lost;

    // Nobody waits for it now: the answer is taken all the same, and kept for the takeover.
    const answered = await api(b.port, 'POST', `/v1/sessions/${session}/inputs/ask`, { output: 'yes' });
    expect(answered.status).toBe(200);
    expect(answered.json).toEqual({ inputId: parked.inputId, status: 'ok' });

    // The retry waits for the round, which b takes over once a's lease lapses: the first call is
    // answered from what was posted meanwhile; b parks the next one, answered while b waits.
    const retry = api(b.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key);
    const next = await until(
      async () =>
        (await api(b.port, 'GET', `/v1/sessions/${session}/inputs`)).json?.inputs?.find(
          (i: { callId: string }) => i.callId === 'then',
        ),
      { timeoutMs: 30_000, what: 'the second ask_user parked by the coordinator that took the round over' },
    );
    expect(
      (await api(b.port, 'POST', `/v1/sessions/${session}/inputs/${next.inputId}`, { output: 'later' })).status,
    ).toBe(200);
    const retried = await retry;
    expect(retried.status).toBe(200);
    expect(retried.json.results.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([
      ['ask', 'ok'],
      ['then', 'ok'],
      ['cmd', 'ok'],
    ]);
    expect(retried.json.results[0].output).toEqual({ answer: 'yes' });
    expect(retried.json.results[1].output).toEqual({ answer: 'later' });
    expect(retried.json.results[2].output.stdout).toBe('deployed\n');
    expect(b.output.join('')).toMatch(/taking over round/);
    expect((await api(b.port, 'GET', `/v1/sessions/${session}/inputs`)).json.inputs).toEqual([]);
    const history = (await api(b.port, 'GET', `/v1/sessions/${session}/history`)).json.results as Array<{ id: string }>;
    expect(history.filter((e) => e.id === 'ask')).toHaveLength(1);
    expect(history.filter((e) => e.id === 'then')).toHaveLength(1);
    expect(history.filter((e) => e.id === 'cmd')).toHaveLength(1);
  }, 120_000);
});
