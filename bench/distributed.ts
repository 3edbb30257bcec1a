// The distributed path against a peer on the same Redis, in this process: plain BullMQ (one
// queue, addBulk + job.waitUntilFinished(queueEvents)) with the same worker concurrency and a
// no-op processor. Ours runs the three passes (per-run rules, state and events in Redis).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDistributedEngine, type Engine, type NamedLimits } from '@tool-dispatch/coordinator';
import {
  DEFAULT_WORKER_CONCURRENCY,
  type DispatchConfigOptions,
  resolveConfig,
  type ToolDefinition,
} from '@tool-dispatch/shared';
import { createBuiltinRegistry, type RunningWorker, startWorker } from '@tool-dispatch/worker';
import { type Job, Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';

const CALLS_PER_ROUND = 5;
const CONCURRENT_RUNS = 50;
const WORKERS = 2;
/** Rounds are measured in blocks that alternate between ours and the peer, so drift hits both. */
const LATENCY_BLOCK = 100;
/** The throughput test alternates too, in this many slices per side. */
const THROUGHPUT_SLICES = 8;
const PARAMS = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
const TOOL: ToolDefinition = {
  name: 'bench_noop',
  description: 'no-op',
  parameters: PARAMS,
  concurrency: 'concurrent',
};
/** The same retention as our jobs (FINISHED_JOB_RETENTION_S, OUTCOME_TTL_MS), so BullMQ does the same work. */
const PEER_JOB_OPTIONS = { removeOnComplete: { age: 60 * 60 }, removeOnFail: { age: 24 * 60 * 60 } };
const noop = async (args: Record<string, unknown>) => ({ n: args.n });

export interface DistributedOptions {
  /** Measured rounds of the one-run latency test, per side (after warm-up). */
  latencyRounds: number;
  /** Length of the 50-run throughput test, per side, in ms (in alternating slices). */
  throughputMs: number;
  workerConcurrency: number;
}

export interface SideFigures {
  p50Ms: number;
  p99Ms: number;
  callsPerSec: number;
  /** Redis commands per call during the throughput test (INFO total_commands_processed). */
  commandsPerCall: number;
  /** CPU time per call during the throughput test, of this Node process and of redis-server (µs). */
  nodeCpuUsPerCall: number;
  redisCpuUsPerCall: number;
}

export interface DistributedFigures {
  options: DistributedOptions;
  ours: SideFigures;
  peer: SideFigures;
  /** ours / peer: below 1 is better for latency, above 1 for throughput. */
  /**
   * ours / peer. `throughput` is the median of the ratios of back-to-back slices (robust to load
   * from outside the bench); `cpu` compares Node CPU per call, which hardly depends on that load.
   */
  ratios: { p50: number; p99: number; throughput: number; cpu: number };
}

/** One side of the comparison: a round of 5 no-op calls in run `i`. */
export interface Side {
  name: 'ours' | 'peer';
  round(i: number): Promise<void>;
  close(): Promise<void>;
  /** Ours: the engine, for rounds of other shapes (the limits bench). */
  engine?: Engine;
}

export function distributedOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): DistributedOptions {
  return {
    latencyRounds: Number(env.BENCH_DIST_ROUNDS ?? 1000),
    throughputMs: Number(env.BENCH_DIST_MS ?? 10_000),
    workerConcurrency: Number(env.TD_WORKER_CONCURRENCY ?? DEFAULT_WORKER_CONCURRENCY),
  };
}

export async function startOurs(
  redisUrl: string,
  concurrency: number,
  progress: (s: string) => void,
  /**
   * Overrides of the config (TD_REDIS_REPLICA_ACKS for the acks bench) and the prefix; TD_LIMITS and
   * more no-op tools (each a handler on the workers that tells `onCall` of its calls) for the limits bench.
   */
  options: {
    prefix?: string;
    config?: DispatchConfigOptions;
    namedLimits?: NamedLimits;
    tools?: readonly ToolDefinition[];
    onCall?: (tool: string) => void;
  } = {},
): Promise<Side> {
  const root = mkdtempSync(path.join(tmpdir(), 'td-bench-dist-'));
  const prefix = options.prefix ?? 'bench-td';
  const config = resolveConfig(
    { mode: 'distributed', redisUrl, prefix, workspaceRoot: root, workerConcurrency: concurrency, ...options.config },
    {},
  );
  const tools = [TOOL, ...(options.tools ?? [])];
  const built = await createDistributedEngine(config, {
    tools,
    log: (line) => progress(`ours: ${line}`),
    ...(options.namedLimits ? { namedLimits: options.namedLimits } : {}),
  });
  const engine: Engine = built.engine;
  const workers: RunningWorker[] = [];
  for (let i = 0; i < WORKERS; i++) {
    const registry = createBuiltinRegistry();
    registry.register(TOOL.name, noop);
    for (const tool of options.tools ?? [])
      registry.register(tool.name, async function benchTool(args: Record<string, unknown>) {
        options.onCall?.(tool.name);
        return noop(args);
      });
    workers.push(
      await startWorker({
        redisUrl,
        prefix,
        registry,
        config: { httpAllow: [], searchUrl: undefined },
        concurrency,
        durability: { acks: config.redisReplicaAcks, waitMs: config.redisWaitMs },
        onError: (e) => progress(`ours: worker: ${e.message}`),
      }),
    );
  }
  // One session per run, its schema fetched once (openai-style: every call goes through run_tool).
  for (let i = 0; i < CONCURRENT_RUNS; i++) {
    const session = `bench-${i}`;
    await engine.putSession(session, { provider: 'openai' });
    const r = await engine.submitRound({
      session,
      run: 'setup',
      calls: [{ id: 'f', name: 'find_tools', args: { names: tools.map((t) => t.name) } }],
    });
    if (r.results[0]?.status !== 'ok') throw new Error(`find_tools: ${JSON.stringify(r.results[0])}`);
  }
  let n = 0;
  return {
    name: 'ours',
    engine,
    async round(i) {
      const response = await engine.submitRound({
        session: `bench-${i}`,
        run: 'bench',
        calls: Array.from({ length: CALLS_PER_ROUND }, (_, c) => ({
          id: `c${c}`,
          name: 'run_tool',
          args: { name: TOOL.name, args: { n: n++ } },
        })),
      });
      const bad = response.results.find((x) => x.status !== 'ok');
      if (bad) throw new Error(`ours: a call ended ${bad.status}: ${JSON.stringify(bad)}`);
    },
    async close() {
      await engine.drain();
      await engine.close();
      await built.release();
      await Promise.all(workers.map((w) => w.close()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function startPeer(redisUrl: string, concurrency: number): Promise<Side> {
  const prefix = 'bench-peer';
  const name = 'noop';
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection, prefix });
  const events = new QueueEvents(name, { connection: { url: redisUrl }, prefix });
  // waitUntilFinished listens on both, once per waiting job: 50 runs × 5 calls at once.
  for (const emitter of [queue, events]) emitter.setMaxListeners(CONCURRENT_RUNS * CALLS_PER_ROUND + 10);
  const workers = Array.from(
    { length: WORKERS },
    () =>
      new Worker(
        name,
        async function peerNoop(job: Job) {
          return noop(job.data as Record<string, unknown>);
        },
        { connection, prefix, concurrency },
      ),
  );
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady(), ...workers.map((w) => w.waitUntilReady())]);
  let n = 0;
  return {
    name: 'peer',
    async round() {
      const jobs = await queue.addBulk(
        Array.from({ length: CALLS_PER_ROUND }, () => ({ name: TOOL.name, data: { n: n++ }, opts: PEER_JOB_OPTIONS })),
      );
      await Promise.all(jobs.map((j) => j.waitUntilFinished(events)));
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await events.close();
      await queue.close();
      connection.disconnect();
    },
  };
}

export async function latencyBlock(side: Side, rounds: number, into: number[]): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    await side.round(0);
    into.push(performance.now() - t0);
  }
}

/** 50 runs at once, each doing sequential rounds, for `ms`; returns calls completed and elapsed ms. */
export async function throughputBlock(side: Side, ms: number): Promise<{ calls: number; elapsedMs: number }> {
  const t0 = performance.now();
  const until = t0 + ms;
  let rounds = 0;
  await Promise.all(
    Array.from({ length: CONCURRENT_RUNS }, async (_, i) => {
      while (performance.now() < until) {
        await side.round(i);
        rounds++;
      }
    }),
  );
  return { calls: rounds * CALLS_PER_ROUND, elapsedMs: performance.now() - t0 };
}

/** Commands processed and CPU used so far, by redis-server (INFO) and by this process. */
async function usage(redis: Redis): Promise<{ commands: number; redisCpuUs: number; nodeCpuUs: number }> {
  const info = await redis.info();
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  const cpu = process.cpuUsage();
  return {
    commands: field('total_commands_processed'),
    redisCpuUs: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6,
    nodeCpuUs: cpu.user + cpu.system,
  };
}

const median = (values: readonly number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

const percentile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;

export async function benchDistributed(
  options: DistributedOptions,
  progress: (s: string) => void,
): Promise<DistributedFigures> {
  const server = await spawnRedisServer();
  progress(`distributed: redis-server of its own at ${server.url}`);
  const admin = new Redis(server.url);
  const sides: Side[] = [];
  try {
    const ours = await startOurs(server.url, options.workerConcurrency, progress);
    sides.push(ours);
    const peer = await startPeer(server.url, options.workerConcurrency);
    sides.push(peer);

    progress('distributed: warm-up');
    for (const side of sides) {
      await latencyBlock(side, 200, []);
      await throughputBlock(side, 1_000);
    }

    const latencies = { ours: [] as number[], peer: [] as number[] };
    for (let done = 0; done < options.latencyRounds; done += LATENCY_BLOCK) {
      const rounds = Math.min(LATENCY_BLOCK, options.latencyRounds - done);
      for (const side of sides) await latencyBlock(side, rounds, latencies[side.name]);
      progress(`distributed: latency, ${done + rounds}/${options.latencyRounds} rounds each`);
    }

    const zero = () => ({ calls: 0, elapsedMs: 0, commands: 0, redisCpuUs: 0, nodeCpuUs: 0 });
    const totals = { ours: zero(), peer: zero() };
    const sliceRates = { ours: [] as number[], peer: [] as number[] };
    for (let slice = 0; slice < THROUGHPUT_SLICES; slice++) {
      for (const side of slice % 2 === 0 ? sides : [...sides].reverse()) {
        const before = await usage(admin);
        const t = await throughputBlock(side, options.throughputMs / THROUGHPUT_SLICES);
        const after = await usage(admin);
        const total = totals[side.name];
        total.commands += after.commands - before.commands;
        total.redisCpuUs += after.redisCpuUs - before.redisCpuUs;
        total.nodeCpuUs += after.nodeCpuUs - before.nodeCpuUs;
        total.calls += t.calls;
        total.elapsedMs += t.elapsedMs;
        sliceRates[side.name].push((t.calls * 1000) / t.elapsedMs);
        progress(
          `distributed: ${side.name}, ${CONCURRENT_RUNS} runs: ${((t.calls * 1000) / t.elapsedMs).toFixed(0)} calls/s`,
        );
      }
    }

    const figures = (name: 'ours' | 'peer'): SideFigures => {
      const sorted = [...latencies[name]].sort((a, b) => a - b);
      const t = totals[name];
      return {
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        callsPerSec: (t.calls * 1000) / t.elapsedMs,
        commandsPerCall: t.commands / t.calls,
        nodeCpuUsPerCall: t.nodeCpuUs / t.calls,
        redisCpuUsPerCall: t.redisCpuUs / t.calls,
      };
    };
    const o = figures('ours');
    const p = figures('peer');
    return {
      options,
      ours: o,
      peer: p,
      ratios: {
        p50: o.p50Ms / p.p50Ms,
        p99: o.p99Ms / p.p99Ms,
        throughput: median(sliceRates.ours.map((rate, i) => rate / (sliceRates.peer[i] ?? Number.NaN))),
        cpu: o.nodeCpuUsPerCall / p.nodeCpuUsPerCall,
      },
    };
  } finally {
    // The spawned redis-server is unref'd: keep the loop alive until its exit is seen.
    const keepAlive = setInterval(() => {}, 1_000);
    for (const side of sides) await side.close().catch((e: Error) => progress(`${side.name}: close: ${e.message}`));
    admin.disconnect();
    await server.stop();
    clearInterval(keepAlive);
  }
}
