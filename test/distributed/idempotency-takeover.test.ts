import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses, killGroup, type Proc } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { until } from '../support/until.js';

// API.md "keys for side effects": a call's idempotencyKey is the same on every retry of its round,
// after a coordinator takeover and on a worker's redelivery. Real processes: a coordinator is
// SIGKILLed while a POST it dispatched is held open by this test's probe, the client retries the
// round under its Idempotency-Key on another coordinator, and the probe records the
// `Idempotency-Key` header of every request it receives.

/** One request the probe received. */
interface Received {
  tag: string;
  method: string;
  key: string | undefined;
}

/** Records every request; holds those tagged `held` open until `release()`, answers the others at once. */
class KeyProbe {
  readonly received: Received[] = [];
  private readonly holding: (() => void)[] = [];
  private released = false;
  private server: http.Server | undefined;
  port = 0;

  async start(): Promise<void> {
    const server = http.createServer((req, res) => {
      const tag = new URL(String(req.url), 'http://probe').searchParams.get('tag') ?? '?';
      const key = req.headers['idempotency-key'];
      this.received.push({ tag, method: String(req.method), key: typeof key === 'string' ? key : undefined });
      req.resume();
      // The answer names the key the probe saw, so the call's output shows what reached it.
      const answer = () => res.end(JSON.stringify({ key }));
      if (tag === 'held' && !this.released) this.holding.push(answer);
      else answer();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Answers the held requests, and every later one at once. */
  release(): void {
    this.released = true;
    for (const answer of this.holding.splice(0)) answer();
  }

  of(tag: string): Received[] {
    return this.received.filter((r) => r.tag === tag);
  }

  url(tag: string): string {
    return `http://127.0.0.1:${this.port}/charge?tag=${tag}`;
  }

  close(): Promise<void> {
    this.release();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

type Result = { id: string; status: string; idempotencyKey?: string; output?: { status?: number; body?: string } };

const post = (id: string, url: string) => ({
  id,
  name: 'run_tool',
  args: { name: 'http_request', args: { url, method: 'POST', body: `{"charge":"${id}"}` } },
});

function describeTakeover(mode: 'redis' | 'cluster'): void {
  describe(`when a coordinator is SIGKILLed while a POST it dispatched is held open (${mode})`, () => {
    const cli = new CliProcesses();
    const probe = new KeyProbe();
    const ctx: { redis?: TestRedis; cluster?: TestRedisCluster; dir?: string; a?: Proc; b?: Proc } = {};

    beforeAll(async () => {
      await probe.start();
      ctx.dir = await mkdtemp(path.join(tmpdir(), 'td-idem-takeover-'));
      const limits = path.join(ctx.dir, 'limits.json');
      // The held POST holds a place of the tool's limit too: the takeover finds it still the call's.
      await writeFile(limits, JSON.stringify({ tools: { http_request: { concurrency: 2 } } }));
      const env: Record<string, string> = {
        TD_PREFIX: randomPrefix(),
        TD_WORKSPACE_ROOT: path.join(ctx.dir, 'ws'),
        TD_HTTP_ALLOW: `127.0.0.1:${probe.port}`,
        TD_LIMITS: limits,
      };
      if (mode === 'redis') {
        ctx.redis = await startRedis();
        env.REDIS_URL = ctx.redis.url;
      } else {
        ctx.cluster = await startRedisCluster();
        env.REDIS_CLUSTER_NODES = ctx.cluster.seeds;
      }
      await Promise.all([cli.start(['worker'], env, /consuming/), cli.start(['worker'], env, /consuming/)]);
      [ctx.a, ctx.b] = await Promise.all([cli.startCoordinator(env), cli.startCoordinator(env)]);
    }, 180_000);

    afterAll(async () => {
      cli.killAll('SIGKILL');
      await probe.close();
      await ctx.redis?.stop();
      await ctx.cluster?.stop();
      if (ctx.dir) await rm(ctx.dir, { recursive: true, force: true });
    });

    it('hands the probe the same Idempotency-Key on every request of a call, the one its result carries after the retry', async () => {
      const a = ctx.a as Proc;
      const b = ctx.b as Proc;
      const session = `idem-${mode}-${Date.now()}`;
      expect(
        (await api(a.port, 'PUT', `/v1/sessions/${session}`, { provider: 'openai', autoApprove: 'all' })).status,
      ).toBe(200);
      const setup = await api(a.port, 'POST', `/v1/sessions/${session}/runs/setup/rounds`, {
        calls: [{ id: 'f', name: 'find_tools', args: { names: ['http_request'] } }],
      });
      expect(setup.status).toBe(200);

      const calls = [post('held', probe.url('held')), post('quick', probe.url('quick'))];
      const key = { 'idempotency-key': `round-${mode}-${Date.now()}` };
      const lost = api(a.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key).catch(() => null);
      await until(async () => probe.of('held').length > 0, {
        timeoutMs: 30_000,
        what: 'the POST held open by the probe',
      });
      killGroup(a, 'SIGKILL');
      await lost;

      // The held POST is answered only once the other coordinator has taken the round over.
      const released = until(async () => /taking over round/.test(b.output.join('')), {
        timeoutMs: 60_000,
        what: 'the takeover',
      }).then(() => probe.release());
      const retried = await api(b.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key);
      await released;
      expect(retried.status, JSON.stringify(retried.json)).toBe(200);
      const [held, quick] = retried.json.results as [Result, Result];
      expect([held.status, quick.status]).toEqual(['ok', 'ok']);
      expect(held.idempotencyKey).toMatch(/^td_/);
      expect(quick.idempotencyKey).toMatch(/^td_/);
      expect(held.idempotencyKey).not.toBe(quick.idempotencyKey);

      // Every request of each call carried that call's key; a side effect never ran twice under it.
      for (const r of [held, quick]) {
        const seen = probe.of(r.id);
        expect(seen.length, `requests of ${r.id}`).toBe(1);
        expect(seen.map((s) => [s.method, s.key])).toEqual(seen.map(() => ['POST', r.idempotencyKey]));
        expect(JSON.parse(String(r.output?.body)).key).toBe(r.idempotencyKey);
      }

      // A second retry under the same key (on the survivor) answers the same round, with the same keys.
      const again = await api(b.port, 'POST', `/v1/sessions/${session}/runs/r1/rounds`, { calls }, key);
      expect((again.json.results as Result[]).map((r) => r.idempotencyKey)).toEqual([
        held.idempotencyKey,
        quick.idempotencyKey,
      ]);
      expect(probe.received).toHaveLength(2);
    }, 150_000);
  });
}

describeTakeover('redis');
describeTakeover('cluster');
