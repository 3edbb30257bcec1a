import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses } from '../support/cli-procs.js';
import { randomPrefix } from '../support/redis.js';
import { startTlsRedis, startTlsRedisCluster, type TlsRedis, type TlsRedisCluster } from '../support/tls-redis.js';
import { until } from '../support/until.js';

// README "Redis over TLS, with AUTH": REDIS_URL=rediss://:password@host:port and TD_REDIS_TLS_CA=<CA
// PEM>. The server has no plain port (--port 0) and needs a password, so a round only completes
// when every connection of the coordinator and the worker (ioredis, BullMQ and their duplicates,
// probes) is TLS, trusts the CA, and authenticates. Real processes, certificates made per run.
let redis: TlsRedis;
let workspaces: string;
const cli = new CliProcesses();

beforeAll(async () => {
  redis = await startTlsRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-tls-'));
}, 60_000);

afterAll(async () => {
  cli.killAll('SIGKILL');
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

const envOf = (extra: Record<string, string> = {}) => ({
  REDIS_URL: redis.url,
  TD_REDIS_TLS_CA: redis.ca,
  TD_PREFIX: randomPrefix(),
  TD_WORKSPACE_ROOT: workspaces,
  ...extra,
});

describe('when REDIS_URL is rediss:// with a password and TD_REDIS_TLS_CA names the CA', () => {
  it('runs a round in distributed mode, serial and concurrent calls alike, over TLS only', async () => {
    const env = envOf();
    await cli.start(['worker'], env, /consuming/);
    const c = await cli.start(['coordinator', '--host', '127.0.0.1'], env, /listening on/);
    await until(async () => (await api(c.port, 'GET', '/readyz')).status === 200, {
      timeoutMs: 20_000,
      what: 'coordinator ready',
    });
    const session = `tls-${Date.now()}`;
    expect(
      (await api(c.port, 'PUT', `/v1/sessions/${session}`, { provider: 'claude-code', autoApprove: 'all' })).status,
    ).toBe(200);
    const calls = [
      { id: 'w', name: 'edit_file', args: { path: 'a.txt', content: 'over tls\n' } },
      { id: 'cmd', name: 'run_command', args: { command: 'cat a.txt' } },
      { id: 'r', name: 'read_files', args: { paths: ['a.txt'] } },
    ];
    // claude-code: each tool's first call answers its schema; the second runs it.
    await api(c.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls });
    const round = await api(c.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls });
    expect(round.status).toBe(200);
    expect(round.json.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(round.json.results[1].output.stdout).toBe('over tls\n');
    expect(round.json.results[2].output.files[0].content).toBe('over tls\n');
    expect(await readFile(path.join(workspaces, 'default', session, 'a.txt'), 'utf8')).toBe('over tls\n');
    // The URL's password never reaches the logs.
    expect(cli.procs.map((p) => p.output.join('')).join('')).not.toContain(redis.password);
  }, 120_000);

  it('does not connect without the CA: the worker reports the certificate and never consumes', async () => {
    const index = cli.procs.length;
    const started = cli.start(['worker'], envOf({ TD_REDIS_TLS_CA: '' }), /consuming/);
    started.catch(() => undefined);
    const proc = await until(async () => cli.procs[index], { timeoutMs: 5_000, what: 'worker spawned' });
    const output = await until(
      async () => (/certificate/i.test(proc.output.join('')) ? proc.output.join('') : undefined),
      { timeoutMs: 20_000, what: 'a certificate error' },
    );
    expect(output).toMatch(/self[- ]signed certificate|unable to verify/i);
    expect(output).not.toMatch(/consuming/);
  }, 60_000);

  it('does not connect with a wrong password', async () => {
    const wrong = redis.url.replace(`:${redis.password}@`, ':wrong@');
    const index = cli.procs.length;
    const started = cli.start(['worker'], envOf({ REDIS_URL: wrong }), /consuming/);
    started.catch(() => undefined);
    const proc = await until(async () => cli.procs[index], { timeoutMs: 5_000, what: 'worker spawned' });
    const output = await until(
      async () =>
        /WRONGPASS|invalid username-password/i.test(proc.output.join('')) ? proc.output.join('') : undefined,
      { timeoutMs: 20_000, what: 'an authentication error' },
    );
    expect(output).not.toMatch(/consuming/);
    expect(output).not.toContain('wrong@');
  }, 60_000);
});

// The same over a Redis Cluster: REDIS_CLUSTER_NODES of rediss:// seeds with the password, every
// node TLS only (clients and cluster bus), so each node connection of ioredis's Cluster (and
// BullMQ's duplicates of it) must be TLS, trust the CA and authenticate.
describe('when REDIS_CLUSTER_NODES are rediss:// seeds with a password and TD_REDIS_TLS_CA names the CA', () => {
  let cluster: TlsRedisCluster;
  beforeAll(async () => {
    cluster = await startTlsRedisCluster();
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('runs a round on the cluster over TLS only, with sharded queues', async () => {
    const env = {
      REDIS_CLUSTER_NODES: cluster.seeds,
      TD_REDIS_TLS_CA: cluster.ca,
      TD_PREFIX: randomPrefix(),
      TD_WORKSPACE_ROOT: workspaces,
      TD_QUEUE_SHARDS: '3',
    };
    await cli.start(['worker'], env, /consuming/);
    const c = await cli.start(['coordinator', '--host', '127.0.0.1'], env, /listening on/);
    await until(async () => (await api(c.port, 'GET', '/readyz')).status === 200, {
      timeoutMs: 30_000,
      what: 'coordinator ready',
    });
    const session = `tls-cluster-${Date.now()}`;
    expect(
      (await api(c.port, 'PUT', `/v1/sessions/${session}`, { provider: 'claude-code', autoApprove: 'all' })).status,
    ).toBe(200);
    const calls = [
      { id: 'w', name: 'edit_file', args: { path: 'b.txt', content: 'cluster over tls\n' } },
      { id: 'cmd', name: 'run_command', args: { command: 'cat b.txt' } },
      { id: 'x', name: 'calculate', args: { expression: '6*7' } },
    ];
    // claude-code: each tool's first call answers its schema; the second runs it.
    await api(c.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls });
    const round = await api(c.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls });
    expect(round.status).toBe(200);
    expect(round.json.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(round.json.results[1].output.stdout).toBe('cluster over tls\n');
    expect(round.json.results[2].output.value).toBe(42);
    expect(cli.procs.map((p) => p.output.join('')).join('')).not.toContain(cluster.password);
  }, 120_000);
});
