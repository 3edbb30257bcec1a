// API.md v1.2 "Durability when Redis fails over", on a real Redis Cluster of 3 primaries with
// replicas (cluster-node-timeout 2 s, AOF always), two coordinators and two workers, all real
// processes, TD_REDIS_REPLICA_ACKS=1. Each round's run_command appends a unique token to its
// session's file, every round is sent under an Idempotency-Key and retried on the other
// coordinator after a 5xx or no answer. Under each fault (a primary paused past the node timeout
// with SIGSTOP or DEBUG SLEEP and resumed, failed over by CLUSTER FAILOVER, killed): every round
// answered (after 503s if need be), no token twice, every answered result in history, every
// answered round re-sent under its key gets the same round and runs nothing. The short form
// (SIGSTOP and CLUSTER FAILOVER) runs in the suite; TD_LONG=1 (`pnpm test:long`) adds DEBUG SLEEP,
// kill, and the two-replica cluster.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CliProcesses } from '../support/cli-procs.js';
import { randomPrefix } from '../support/redis.js';
import { type ReplicatedCluster, startReplicatedCluster } from '../support/redis-replicated.js';
import { until } from '../support/until.js';

const LONG = process.env.TD_LONG === '1';
/** Sessions sending rounds one after another during a fault. */
const SESSIONS = 6;
/** How long the load runs around a fault. */
const LOAD_MS = LONG ? 30_000 : 14_000;
/** A round not answered 200 within this, retries included, fails the test. */
const ROUND_PATIENCE_MS = 90_000;

type Fault = 'sigstop' | 'debug-sleep' | 'failover' | 'kill';

interface Deployment {
  cluster: ReplicatedCluster;
  ports: [number, number];
  workspaces: string;
  cli: CliProcesses;
}

async function deploy(replicas: 1 | 2, acks: number): Promise<Deployment> {
  const cluster = await startReplicatedCluster(replicas);
  const workspaces = await mkdtemp(path.join(tmpdir(), 'td-failover-'));
  const cli = new CliProcesses();
  const env = {
    REDIS_CLUSTER_NODES: cluster.seeds,
    TD_PREFIX: randomPrefix(),
    TD_WORKSPACE_ROOT: workspaces,
    TD_REDIS_REPLICA_ACKS: String(acks),
  };
  await Promise.all([cli.start(['worker'], env, /consuming/), cli.start(['worker'], env, /consuming/)]);
  const [a, b] = await Promise.all([cli.startCoordinator(env), cli.startCoordinator(env)]);
  return { cluster, ports: [a.port, b.port], workspaces, cli };
}

async function undeploy(d: Deployment | undefined): Promise<void> {
  d?.cli.killAll('SIGKILL');
  await d?.cluster.stop();
  if (d) await rm(d.workspaces, { recursive: true, force: true });
}

/** A session whose run_command runs without a confirmation, its schemas shown. */
async function newSession(d: Deployment, name: string): Promise<string> {
  const id = `${name}-${Math.random().toString(36).slice(2, 8)}`;
  await until(
    async () =>
      (await api(d.ports[0], 'PUT', `/v1/sessions/${id}`, { provider: 'claude-code', autoApprove: 'all' })).status ===
      200,
    { timeoutMs: 30_000, what: 'session created' },
  );
  await until(
    async () =>
      (
        await api(d.ports[0], 'POST', `/v1/sessions/${id}/runs/setup/rounds`, {
          calls: [{ id: 'f', name: 'find_tools', args: { names: ['run_command'] } }],
        })
      ).status === 200,
    { timeoutMs: 30_000, what: 'schemas shown' },
  );
  return id;
}

interface Sent {
  session: string;
  run: string;
  key: string;
  token: string;
  round?: string;
  /** The call's result: `ok`, or `error` with its code (worker_lost: outcome unknown; unavailable: not run). */
  result?: string;
  /** The call's error message, when it is not ok (shown when a promise breaks). */
  message?: string;
  tries: number;
  unavailable: number;
  answeredMs?: number;
}

const callsOf = (token: string) => [{ id: 'c', name: 'run_command', args: { command: `echo ${token} >> tokens.txt` } }];

/** POSTs a round, with a client deadline; the status (0: no answer), its body and its Retry-After. */
async function post(port: number, s: Sent) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v1/sessions/${s.session}/runs/${s.run}/rounds`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': s.key },
      body: JSON.stringify({ calls: callsOf(s.token) }),
      signal: AbortSignal.timeout(15_000),
    });
    // biome-ignore lint/suspicious/noExplicitAny: checked by the test
    const json = (await res.json().catch(() => null)) as any;
    return { status: res.status, json, retryAfter: res.headers.get('retry-after') };
  } catch {
    return { status: 0, json: null, retryAfter: null };
  }
}

/** Sends a round until it is answered 200, alternating coordinators; 503s must carry Retry-After and `unavailable`. */
async function sendUntilAnswered(d: Deployment, s: Sent): Promise<void> {
  const start = Date.now();
  for (;;) {
    const r = await post(d.ports[s.tries++ % 2] as number, s);
    if (r.status === 200) {
      s.round = r.json.round;
      const result = r.json.results[0];
      s.result = result.status === 'ok' ? 'ok' : `${result.status}/${result.error?.code}`;
      s.message = result.error?.message;
      s.answeredMs = Date.now() - start;
      return;
    }
    const logs = () => d.cli.procs.map((p) => p.output.join('').slice(-3000)).join('\n----\n');
    if (r.status !== 0 && r.status !== 503) expect.fail(`${r.status} ${JSON.stringify(r.json)}\n${logs()}`);
    if (r.status === 503) {
      s.unavailable++;
      expect(r.json?.error?.code, JSON.stringify(r.json)).toMatch(/^(unavailable|overloaded|shutting_down)$/);
      expect(r.retryAfter).toBeTruthy();
    }
    if (Date.now() - start > ROUND_PATIENCE_MS)
      throw new Error(`round ${s.key} not answered in ${ROUND_PATIENCE_MS} ms`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function tokensOf(d: Deployment, session: string): Promise<string[]> {
  const text = await readFile(path.join(d.workspaces, 'default', session, 'tokens.txt'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}

async function applyFault(d: Deployment, fault: Fault, primary: number): Promise<void> {
  const { cluster } = d;
  const pauseMs = cluster.nodeTimeoutMs * 3;
  if (fault === 'sigstop') {
    cluster.pause(primary);
    await new Promise((r) => setTimeout(r, pauseMs));
    cluster.resume(primary);
  } else if (fault === 'debug-sleep') {
    // Answers once the sleep ends; the node is unresponsive meanwhile.
    await cluster.cli(primary, 'debug', 'sleep', String(pauseMs / 1000));
  } else if (fault === 'failover') {
    const [replica] = await cluster.replicasOf(primary);
    expect(replica).toBeDefined();
    await cluster.cli(replica as number, 'cluster', 'failover');
  } else {
    await cluster.kill(primary);
    await new Promise((r) => setTimeout(r, pauseMs));
    await cluster.revive(primary);
  }
}

/** Load on SESSIONS sessions around one fault of the primary of the first session's slot. */
async function loadThrough(d: Deployment, fault: Fault) {
  const sessions = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => newSession(d, `${fault}${i}`)));
  const primary = await d.cluster.primaryOf(`s:${sessions[0]}`);
  const sent: Sent[] = [];
  const stopAt = Date.now() + LOAD_MS;
  let faultAt = 0;
  let n = 0;
  const loads = sessions.map(async (session) => {
    while (Date.now() < stopAt) {
      const s: Sent = { session, run: 'r', key: `k${n}`, token: `t${n++}-${fault}`, tries: 0, unavailable: 0 };
      sent.push(s);
      await sendUntilAnswered(d, s);
    }
  });
  await new Promise((r) => setTimeout(r, 2_000));
  faultAt = Date.now();
  await applyFault(d, fault, primary);
  await Promise.all(loads);
  await d.cluster.waitOk();
  return { sessions, sent, faultAt };
}

async function checkPromises(d: Deployment, fault: Fault, sessions: string[], sent: Sent[]): Promise<void> {
  // Each answered round's token once; history has every answered result.
  for (const session of sessions) {
    const tokens = await tokensOf(d, session);
    const mine = sent.filter((s) => s.session === session);
    for (const s of mine) {
      // ok: ran once. worker_lost: its outcome was lost, it ran at most once. unavailable: never ran.
      const times = tokens.filter((t) => t === s.token).length;
      if (s.result === 'ok') expect(times, `${s.token} (ok) in ${session}`).toBe(1);
      else if (s.result === 'error/unavailable') expect(times, `${s.token} (${s.result}) in ${session}`).toBe(0);
      else expect(times, `${s.token} (${s.result}) in ${session}`).toBeLessThanOrEqual(1);
      expect(['ok', 'error/worker_lost', 'error/unavailable'], `${s.token}: ${s.message}`).toContain(s.result);
    }
    const history = await api(d.ports[0], 'GET', `/v1/sessions/${session}/history?tool=run_command`);
    expect(history.status).toBe(200);
    const rounds = new Set((history.json.results as Array<{ round: string }>).map((r) => r.round));
    for (const s of mine) expect(rounds.has(s.round as string), `round ${s.round} of ${s.key} in history`).toBe(true);
  }
  // Re-sent under its key: the same round, nothing run again.
  for (const s of sent) {
    const again = await post(d.ports[1], s);
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    expect(again.json.round).toBe(s.round);
    expect(again.json.results[0].status).not.toBe('unknown');
  }
  for (const session of sessions) {
    const tokens = await tokensOf(d, session);
    expect(new Set(tokens).size, `no token twice in ${session} after re-sending (${fault})`).toBe(tokens.length);
  }
}

function report(fault: Fault, replicas: number, sent: Sent[]) {
  const answered = sent.filter((s) => s.round).length;
  const unavailable = sent.reduce((k, s) => k + s.unavailable, 0);
  const slowest = Math.max(...sent.map((s) => s.answeredMs ?? 0));
  const ended = sent.filter((s) => s.result !== 'ok').map((s) => s.result);
  console.log(
    `[failover-durability] ${fault} (${replicas} replica${replicas > 1 ? 's' : ''}/primary): rounds ${sent.length}, answered ${answered}, 503s ${unavailable}, slowest round (recovery) ${slowest} ms, calls not ok: ${ended.join(', ') || 'none'}`,
  );
}

const FAULTS: Fault[] = LONG ? ['sigstop', 'debug-sleep', 'failover', 'kill'] : ['sigstop', 'failover'];

describe.each(LONG ? ([1, 2] as const) : ([1] as const))(
  'a cluster with %i replica(s) per primary, acks 1',
  (replicas) => {
    let d: Deployment | undefined;
    beforeAll(async () => {
      d = await deploy(replicas, 1);
    }, 180_000);
    afterAll(() => undeploy(d));

    it('acknowledges every round with WAIT on the primaries', async () => {
      const dep = d as Deployment;
      const session = await newSession(dep, 'wait');
      const s: Sent = { session, run: 'r', key: 'k', token: 'wait-token', tries: 0, unavailable: 0 };
      await sendUntilAnswered(dep, s);
      const stats = await Promise.all(dep.cluster.ports.map((p) => dep.cluster.cli(p, 'info', 'commandstats')));
      const waits = stats.map((t) => Number(/cmdstat_wait:calls=(\d+)/.exec(t)?.[1] ?? 0)).reduce((a, b) => a + b, 0);
      expect(waits).toBeGreaterThanOrEqual(3); // begin, start, commit
    }, 60_000);

    it('answers 503 unavailable with Retry-After when the replica does not acknowledge a begin, runs nothing, and the retry runs it once', async () => {
      const dep = d as Deployment;
      const session = await newSession(dep, 'noack');
      const primary = await dep.cluster.primaryOf(`s:${session}`);
      const replicaPorts = await dep.cluster.replicasOf(primary);
      for (const r of replicaPorts) dep.cluster.pause(r);
      const s: Sent = { session, run: 'r', key: 'k-noack', token: 'noack-token', tries: 0, unavailable: 0 };
      const refused = await post(dep.ports[0], s);
      for (const r of replicaPorts) dep.cluster.resume(r);
      expect(refused.status, JSON.stringify(refused.json)).toBe(503);
      expect(refused.json.error.code).toBe('unavailable');
      expect(refused.retryAfter).toBe('1');
      expect(await tokensOf(dep, session)).toEqual([]);
      await dep.cluster.waitOk();
      await sendUntilAnswered(dep, s);
      expect(await tokensOf(dep, session)).toEqual(['noack-token']);
      const again = await post(dep.ports[0], s);
      expect(again.json.round).toBe(s.round);
      expect(await tokensOf(dep, session)).toEqual(['noack-token']);
    }, 120_000);

    it('serves a retry of an answered round only once a replica acknowledges what it read: 503 meanwhile, then the same round, nothing run again', async () => {
      const dep = d as Deployment;
      const session = await newSession(dep, 'replay');
      const s: Sent = { session, run: 'r', key: 'k-replay', token: 'replay-token', tries: 0, unavailable: 0 };
      await sendUntilAnswered(dep, s);
      const primary = await dep.cluster.primaryOf(`s:${session}`);
      const replicaPorts = await dep.cluster.replicasOf(primary);
      for (const r of replicaPorts) dep.cluster.pause(r);
      const refused = await post(dep.ports[1], s);
      for (const r of replicaPorts) dep.cluster.resume(r);
      expect(refused.status, JSON.stringify(refused.json)).toBe(503);
      expect(refused.json.error.code).toBe('unavailable');
      expect(refused.json.error.message).toMatch(/round .*'s answer was acknowledged by 0 of the 1 Redis replicas/);
      expect(refused.retryAfter).toBe('1');
      await dep.cluster.waitOk();
      const again = await post(dep.ports[1], s);
      expect(again.status).toBe(200);
      expect(again.json.round).toBe(s.round);
      expect(await tokensOf(dep, session)).toEqual(['replay-token']);
    }, 120_000);

    it.each(FAULTS)(
      'keeps every promise through a primary %s under load',
      async (fault) => {
        const dep = d as Deployment;
        const { sessions, sent } = await loadThrough(dep, fault);
        report(fault, replicas, sent);
        expect(sent.every((s) => s.round)).toBe(true);
        await checkPromises(dep, fault, sessions, sent);
      },
      300_000,
    );
  },
);
