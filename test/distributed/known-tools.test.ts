// API.md v1.2 "Known tools stay known": a tool the catalog knows is never answered `unknown`
// because the store lost the workers' registry (as a Redis failover can): the call waits for
// workers within the round's patience, then ends `error`/`unavailable`. Real coordinator and
// worker processes on a real Redis.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, CliProcesses, type Proc } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';

const cli = new CliProcesses();
let redis: TestRedis;
let workspaces: string;
let coordinator: Proc;
let env: Record<string, string>;
let prefix: string;

beforeAll(async () => {
  redis = await startRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-known-tools-'));
  prefix = randomPrefix();
  env = { REDIS_URL: redis.url, TD_PREFIX: prefix, TD_WORKSPACE_ROOT: workspaces };
  coordinator = await cli.start(['coordinator', '--host', '127.0.0.1'], env, /listening on/);
}, 120_000);

afterAll(async () => {
  cli.killAll('SIGKILL');
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

const round = (session: string, run: string) =>
  api(coordinator.port, 'POST', `/v1/sessions/${session}/runs/${run}/rounds`, {
    calls: [{ id: 'c', name: 'calculate', args: { expression: '6*7' } }],
  });

it('ends a known tool error/unavailable, not unknown, while no worker is announced, and runs it once one is', async () => {
  const session = `known-${Date.now()}`;
  expect((await api(coordinator.port, 'PUT', `/v1/sessions/${session}`, { provider: 'claude-code' })).status).toBe(200);
  // The schema shown first (claude-code defers it); find_tools is the coordinator's own, no worker needed.
  const shown = await api(coordinator.port, 'POST', `/v1/sessions/${session}/runs/setup/rounds`, {
    calls: [{ id: 'f', name: 'find_tools', args: { names: ['calculate'] } }],
  });
  expect(shown.json.results[0].status).toBe('ok');
  const none = await round(session, 'r1');
  expect(none.status).toBe(200);
  expect(none.json.results[0]).toMatchObject({ name: 'calculate', status: 'error', error: { code: 'unavailable' } });
  expect(none.json.results[0].error.message).toMatch(/did not run/);

  await cli.start(['worker'], env, /consuming/);
  const back = await round(session, 'r2');
  expect(back.json.results[0]).toMatchObject({ status: 'ok', output: { value: 42 } });

  // The registry lost (its keys gone, as a failover can lose them): the round waits for the
  // workers' next announcement instead of answering unknown.
  const r = new Redis(redis.url);
  try {
    const keys = await r.keys(`${prefix}:{w}:*`);
    expect(keys.length).toBeGreaterThan(0);
    await r.del(...keys);
  } finally {
    r.disconnect();
  }
  const lost = await round(session, 'r3');
  expect(lost.json.results[0]).toMatchObject({ status: 'ok', output: { value: 42 } });
}, 120_000);
