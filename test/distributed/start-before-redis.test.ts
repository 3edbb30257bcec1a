import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses } from '../support/cli-procs.js';
import { randomPrefix, spawnRedisServer, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// A process started while its Redis does not answer within TD_REDIS_COMMAND_TIMEOUT_MS (a failover
// under way, a machine too loaded to answer in time; here CLIENT PAUSE WRITE: connections get ready, writes are held) waits for it: it says so
// in one line per try and starts once Redis answers, instead of exiting on "Command timed out".
// (A Redis not listening at all is waited for by the connections themselves: they reconnect.)
// Any other start error still ends the process at once (test/mcp-config-cli.test.ts, cli.test.ts).
const workspaces = mkdtempSync(path.join(tmpdir(), 'td-start-'));
let redis: TestRedis;
let procs: CliProcesses;

beforeAll(async () => {
  redis = await spawnRedisServer();
}, 60_000);
afterEach(() => {
  procs?.killAll('SIGKILL');
});
afterAll(async () => {
  await redis?.stop();
  rmSync(workspaces, { recursive: true, force: true });
});

const WAITING = /Redis did not answer at start \(.+\); trying again in \d+ ms/;

/** Longest Redis holds writes; the test lets them go (CLIENT UNPAUSE) once both processes waited. */
const PAUSE_MS = 120_000;

describe('a process started while its Redis does not answer', () => {
  it('worker and coordinator wait for Redis, then start and run a round', async () => {
    procs = new CliProcesses();
    const admin = new Redis(redis.url);
    await admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    const env = {
      REDIS_URL: redis.url,
      TD_PREFIX: randomPrefix('tdstart'),
      TD_REDIS_COMMAND_TIMEOUT_MS: '300',
      TD_WORKSPACE_ROOT: workspaces,
    };
    const [worker, coordinator] = await Promise.all([
      procs.start(['worker'], env, WAITING),
      procs.start(['coordinator', '--host', '127.0.0.1'], env, WAITING),
    ]);
    expect(worker.output.join('')).toMatch(/^worker: Redis did not answer at start/m);
    expect(coordinator.output.join('')).toMatch(/^coordinator: Redis did not answer at start/m);
    // Both asked and waited while Redis held their writes; they start once it answers again.
    expect(worker.child.exitCode).toBeNull();
    expect(coordinator.child.exitCode).toBeNull();
    await admin.call('CLIENT', 'UNPAUSE');
    admin.disconnect();
    await until(async () => /consuming/.test(worker.output.join('')), { timeoutMs: 30_000, what: 'worker consuming' });
    await until(async () => /listening on/.test(coordinator.output.join('')), {
      timeoutMs: 30_000,
      what: 'coordinator listening',
    });
    expect(worker.child.exitCode).toBeNull();
    expect(coordinator.child.exitCode).toBeNull();

    expect((await api(coordinator.port, 'PUT', '/v1/sessions/s1', { provider: 'openai' })).status).toBe(200);
    const found = await api(coordinator.port, 'POST', '/v1/sessions/s1/runs/r1/rounds', {
      calls: [{ id: 'f', name: 'find_tools', args: { names: ['calculate'] } }],
    });
    expect(found.status).toBe(200);
    const round = await api(coordinator.port, 'POST', '/v1/sessions/s1/runs/r1/rounds', {
      calls: [{ id: 'c1', name: 'run_tool', args: { name: 'calculate', args: { expression: '1 + 1' } } }],
    });
    expect(round.status).toBe(200);
    expect(round.json.results[0]).toMatchObject({ id: 'c1', status: 'ok' });
  }, 120_000);
});
