import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses, killGroup, type Proc } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { until } from '../support/until.js';

// DESIGN.md pass 2 and API.md: at most MAX_CONCURRENT_TOOLS (5) calls of a run in flight, and
// never two of its serial calls at once, whichever coordinators its rounds reach. Real processes:
// two coordinators and a worker on one Redis (distributed) or a Redis Cluster (cluster), no sticky
// routing: two rounds of one run go to the two coordinators at once, many times, with random
// sizes. Every call is a request to this test's probe server (http_request for the concurrent
// class, run_command running curl for the serial one), which counts what is in flight per run.

const MAX = 5;
const ITERATIONS = Number(process.env.TD_RUN_LIMITS_ITERATIONS ?? 8);

/** What the probe saw of one run. */
interface RunSeen {
  inFlight: number;
  serial: number;
  max: number;
  maxSerial: number;
  calls: number;
}

class Probe {
  readonly runs = new Map<string, RunSeen>();
  private server: http.Server | undefined;
  port = 0;

  async start(): Promise<void> {
    const server = http.createServer((req, res) => {
      const u = new URL(String(req.url), 'http://probe');
      const run = u.searchParams.get('run') ?? '?';
      const serial = u.searchParams.get('kind') === 'serial';
      const hold = Number(u.searchParams.get('hold') ?? 100);
      const seen = this.runs.get(run) ?? { inFlight: 0, serial: 0, max: 0, maxSerial: 0, calls: 0 };
      this.runs.set(run, seen);
      seen.calls++;
      seen.inFlight++;
      if (serial) seen.serial++;
      seen.max = Math.max(seen.max, seen.inFlight);
      seen.maxSerial = Math.max(seen.maxSerial, seen.serial);
      setTimeout(() => {
        seen.inFlight--;
        if (serial) seen.serial--;
        res.end('ok');
      }, hold);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  url(run: string, kind: 'concurrent' | 'serial', n: string, hold: number): string {
    return `http://127.0.0.1:${this.port}/call?run=${run}&kind=${kind}&n=${n}&hold=${hold}`;
  }

  close(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** A seeded generator, so a failure names the seed that reproduces its sizes. */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s % n;
  };
}

/** Two coordinators and a worker on `env`'s store, plus the probe; stopped after the file. */
function useTwoCoordinators(store: () => Promise<{ env: Record<string, string>; stop(): Promise<void> }>) {
  const cli = new CliProcesses();
  const probe = new Probe();
  const ctx: { a?: Proc; b?: Proc; stop?: () => Promise<void>; workspaces?: string } = {};
  beforeAll(async () => {
    const started = await store();
    ctx.stop = started.stop;
    await probe.start();
    ctx.workspaces = await mkdtemp(path.join(tmpdir(), 'td-run-limits-'));
    const env = {
      ...started.env,
      TD_PREFIX: randomPrefix(),
      TD_WORKSPACE_ROOT: ctx.workspaces,
      TD_HTTP_ALLOW: `127.0.0.1:${probe.port}`,
      // Its run_command calls curl the probe on the host's loopback: the sandbox stays on, with the host's network.
      TD_SANDBOX_NET: 'host',
      MAX_CONCURRENT_TOOLS: String(MAX),
    };
    await cli.start(['worker'], env, /consuming/);
    [ctx.a, ctx.b] = await Promise.all([cli.startCoordinator(env), cli.startCoordinator(env)]);
  }, 180_000);
  afterAll(async () => {
    cli.killAll('SIGKILL');
    await probe.close();
    await ctx.stop?.();
    if (ctx.workspaces) await rm(ctx.workspaces, { recursive: true, force: true });
  });
  return { cli, probe, ctx };
}

type Call = { id: string; name: string; args: Record<string, unknown> };

/** A round of `concurrent` http_request calls and `serial` run_command calls, in random order. */
function roundOf(
  probe: Probe,
  run: string,
  tag: string,
  sizes: { concurrent: number; serial: number },
  pick: (n: number) => number,
): Call[] {
  const kinds = [
    ...Array.from({ length: sizes.concurrent }, () => 'concurrent' as const),
    ...Array.from({ length: sizes.serial }, () => 'serial' as const),
  ];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [kinds[i], kinds[j]] = [kinds[j] as 'concurrent', kinds[i] as 'concurrent'];
  }
  return kinds.map((kind, i) => {
    const url = probe.url(run, kind, `${tag}${i}`, 150 + pick(250));
    return kind === 'concurrent'
      ? { id: `${tag}${i}`, name: 'http_request', args: { url } }
      : { id: `${tag}${i}`, name: 'run_command', args: { command: `curl -sf "${url}"` } };
  });
}

async function sessionOn(port: number, name: string): Promise<string> {
  const id = `${name}-${Date.now()}`;
  expect((await api(port, 'PUT', `/v1/sessions/${id}`, { provider: 'claude-code', autoApprove: 'all' })).status).toBe(
    200,
  );
  // claude-code defers schemas: shown first, so the calls below run rather than answer `schema`.
  const setup = await api(port, 'POST', `/v1/sessions/${id}/runs/setup/rounds`, {
    calls: [{ id: 'f', name: 'find_tools', args: { names: ['http_request', 'run_command'] } }],
  });
  expect(setup.status).toBe(200);
  return id;
}

function describeRunLimits(
  mode: string,
  store: () => Promise<{ env: Record<string, string>; stop(): Promise<void> }>,
): void {
  describe(`a run's limits across two coordinators (${mode})`, () => {
    const { probe, ctx, cli } = useTwoCoordinators(store);

    it('never lets the probe see more than 5 calls of a run in flight, nor two of its serial calls at once', async () => {
      const a = ctx.a as Proc;
      const b = ctx.b as Proc;
      const seed = Number(process.env.TD_RUN_LIMITS_SEED ?? Date.now() % 100_000);
      const pick = rng(seed);
      const s = await sessionOn(a.port, `limits-${mode}`);
      for (let i = 0; i < ITERATIONS; i++) {
        const run = `run${i}`;
        const sizeOf = () => ({ concurrent: 2 + pick(6), serial: pick(3) });
        const rounds = [roundOf(probe, run, 'a', sizeOf(), pick), roundOf(probe, run, 'b', sizeOf(), pick)];
        // At once, one to each coordinator: no sticky routing.
        const answers = await Promise.all(
          [a, b].map((p, k) => api(p.port, 'POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls: rounds[k] })),
        );
        for (const answer of answers) {
          expect(answer.status, `seed ${seed}, iteration ${i}`).toBe(200);
          const statuses = answer.json.results.map((r: { status: string; error?: unknown }) =>
            r.status === 'ok' ? 'ok' : JSON.stringify(r),
          );
          expect(new Set(statuses), `seed ${seed}, iteration ${i}`).toEqual(new Set(['ok']));
        }
        const seen = probe.runs.get(run);
        expect(seen?.calls, `seed ${seed}, iteration ${i}`).toBe(rounds.flat().length);
        expect(seen?.max, `seed ${seed}, iteration ${i}: calls of ${run} in flight`).toBeLessThanOrEqual(MAX);
        expect(seen?.maxSerial, `seed ${seed}, iteration ${i}: serial calls of ${run} at once`).toBeLessThanOrEqual(1);
      }
      // The limit was reached (the test is not vacuous): some run had 5 in flight at the probe.
      expect(Math.max(...[...probe.runs.values()].map((r) => r.max))).toBe(MAX);
      expect(Math.max(...[...probe.runs.values()].map((r) => r.maxSerial))).toBe(1);
    }, 300_000);

    it('never blocks a run for good when a coordinator holding its places is killed (SIGKILL)', async () => {
      const a = ctx.a as Proc;
      const b = ctx.b as Proc;
      const s = await sessionOn(b.port, `kill-${mode}`);
      const run = 'killed';
      // a holds the run's serial lane with a long command, then dies; b's serial call must still run, after it.
      const held = api(a.port, 'POST', `/v1/sessions/${s}/runs/${run}/rounds`, {
        calls: [
          {
            id: 'long',
            name: 'run_command',
            args: { command: `curl -sf "${probe.url(run, 'serial', 'long', 3_000)}"` },
          },
        ],
      }).catch(() => undefined);
      await until(async () => (probe.runs.get(run)?.inFlight ?? 0) === 1, {
        timeoutMs: 30_000,
        what: 'the long command started',
      });
      killGroup(a, 'SIGKILL');
      cli.procs.splice(cli.procs.indexOf(a), 1);
      const answer = await api(b.port, 'POST', `/v1/sessions/${s}/runs/${run}/rounds`, {
        calls: [
          { id: 'next', name: 'run_command', args: { command: `curl -sf "${probe.url(run, 'serial', 'next', 100)}"` } },
        ],
      });
      expect(answer.status).toBe(200);
      expect(answer.json.results[0].status).toBe('ok');
      await held;
      expect(probe.runs.get(run)?.maxSerial).toBe(1);
    }, 120_000);
  });
}

describeRunLimits('distributed', async () => {
  const redis: TestRedis = await startRedis();
  return { env: { REDIS_URL: redis.url }, stop: () => redis.stop() };
});

describeRunLimits('cluster', async () => {
  const cluster: TestRedisCluster = await startRedisCluster();
  return { env: { REDIS_CLUSTER_NODES: cluster.seeds }, stop: () => cluster.stop() };
});
