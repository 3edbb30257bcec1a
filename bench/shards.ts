// BENCH_ONLY=shards: the project on a 3-primary Redis Cluster (test/support/redis-cluster.ts), a
// coordinator and 2 workers with REDIS_CLUSTER_NODES, run with TD_QUEUE_SHARDS=1 and then 3 under
// the same HTTP load. Per primary: commands, bytes in, CPU and keys, so the spread shows where the
// execution traffic lands; and which primaries hold a BullMQ queue (its `:meta` key).
// Results: bench/results/shards.json and bench/results/shards.svg.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { startRedisCluster } from '../test/support/redis-cluster.js';
import { ensureSessions, LoadClient, quantile, runSlice } from './http-load.js';
import { startOursStack } from './http-stacks.js';
import { diffRedis, sampleRedis } from './redis-stats.js';
import { lineChartSvg } from './svg-chart.js';

export interface ShardsOptions {
  shards: number[];
  sessions: number;
  ms: number;
  workerConcurrency: number;
  timeoutMs: number;
  resultsDir: string;
}

export interface PrimaryFigures {
  node: string;
  commands: number;
  /** This primary's share of the cluster's commands during the load. */
  commandShare: number;
  netInBytes: number;
  cpuMs: number;
  /** Keys it holds after the load. */
  keys: number;
  /** BullMQ queues whose `:meta` key it holds. */
  queues: string[];
}

export interface ShardsPoint {
  shards: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  nonOkCalls: number;
  statuses: Record<string, number>;
  commandsPerCall: number;
  primaries: PrimaryFigures[];
  /** Largest share of commands on one primary over the smallest (1 = even). */
  spread: number;
}

export function shardsOptionsFromEnv(
  env: NodeJS.ProcessEnv,
  resultsDir: string,
  workerConcurrency: number,
): ShardsOptions {
  return {
    shards: (env.BENCH_SHARDS ?? '1,3').split(',').map(Number),
    sessions: Number(env.BENCH_SHARDS_SESSIONS ?? 100),
    ms: Number(env.BENCH_SHARDS_MS ?? 8_000),
    workerConcurrency,
    timeoutMs: Number(env.BENCH_HTTP_TIMEOUT_MS ?? 60_000),
    resultsDir,
  };
}

async function queuesOn(node: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*:meta`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.sort();
}

export async function benchShards(options: ShardsOptions, progress: (s: string) => void): Promise<ShardsPoint[]> {
  const cluster = await startRedisCluster();
  const nodes = cluster.nodes.map((n) => new Redis(`redis://${n}`));
  const client = new LoadClient(options.sessions);
  const points: ShardsPoint[] = [];
  try {
    for (const shards of options.shards) {
      await Promise.all(nodes.map((n) => n.flushall()));
      progress(`cluster: coordinator + 2 workers with TD_QUEUE_SHARDS=${shards}`);
      const prefix = `bench-shards-${shards}`;
      const stack = await startOursStack({
        redisUrl: '',
        workers: 2,
        workerConcurrency: options.workerConcurrency,
        prefix,
        env: { REDIS_URL: undefined, REDIS_CLUSTER_NODES: cluster.seeds, TD_QUEUE_SHARDS: String(shards) },
      });
      try {
        await ensureSessions(client, stack, options.sessions);
        const load = { sessions: options.sessions, roundSize: 5, run: 'shards', timeoutMs: options.timeoutMs };
        await runSlice(client, stack, { ...load, ms: Math.min(2_000, options.ms) });
        const before = await Promise.all(nodes.map(sampleRedis));
        const slice = await runSlice(client, stack, { ...load, ms: options.ms });
        const after = await Promise.all(nodes.map(sampleRedis));
        const deltas = after.map((a, i) => diffRedis(before[i] as typeof a, a));
        const total = deltas.reduce((n, d) => n + d.commands, 0);
        const primaries: PrimaryFigures[] = await Promise.all(
          deltas.map(async (d, i) => ({
            node: cluster.nodes[i] as string,
            commands: d.commands,
            commandShare: d.commands / total,
            netInBytes: d.netInBytes,
            cpuMs: d.cpuMs,
            keys: (after[i] as { keys: number }).keys,
            queues: await queuesOn(nodes[i] as Redis, prefix),
          })),
        );
        const latencies = [...slice.latenciesMs].sort((a, b) => a - b);
        const shares = primaries.map((p) => p.commandShare);
        const point: ShardsPoint = {
          shards,
          callsPerSec: (slice.calls / slice.elapsedMs) * 1000,
          p50Ms: quantile(latencies, 0.5),
          p99Ms: quantile(latencies, 0.99),
          nonOkCalls: Object.entries(slice.statuses).reduce((n, [k, v]) => n + (k === 'ok' ? 0 : v), 0),
          statuses: slice.statuses,
          commandsPerCall: total / slice.calls,
          primaries,
          spread: Math.max(...shares) / Math.min(...shares),
        };
        points.push(point);
        progress(
          `shards ${shards}: ${point.callsPerSec.toFixed(0)} calls/s, non-ok ${point.nonOkCalls}, commands per primary ${primaries.map((p) => `${(p.commandShare * 100).toFixed(0)}%`).join(' / ')}, queues per primary ${primaries.map((p) => p.queues.length).join(' / ')}`,
        );
      } finally {
        await stack.stop();
      }
    }
  } finally {
    client.close();
    for (const n of nodes) n.disconnect();
    const keepAlive = setInterval(() => undefined, 1_000);
    await cluster.stop().finally(() => clearInterval(keepAlive));
  }
  mkdirSync(options.resultsDir, { recursive: true });
  writeFileSync(path.join(options.resultsDir, 'shards.json'), `${JSON.stringify({ options, points }, null, 2)}\n`);
  writeFileSync(
    path.join(options.resultsDir, 'shards.svg'),
    lineChartSvg({
      title: `Redis Cluster: share of commands per primary (${options.sessions} sessions)`,
      xLabel: 'primary',
      yLabel: '% of the cluster’s commands',
      series: points.map((p) => ({
        name: `TD_QUEUE_SHARDS=${p.shards}`,
        points: p.primaries.map((x, i) => ({ x: i + 1, y: x.commandShare * 100 })),
      })),
    }),
  );
  return points;
}

export function printShards(points: ShardsPoint[], print: (line: string) => void = console.log): void {
  print('\nQueue shards on a 3-primary Redis Cluster (coordinator + 2 workers, rounds of 5 calculate calls)');
  for (const p of points) {
    print(
      `  TD_QUEUE_SHARDS=${p.shards}: ${p.callsPerSec.toFixed(0)} calls/s, p50 ${p.p50Ms.toFixed(1)} ms, p99 ${p.p99Ms.toFixed(1)} ms, non-ok ${p.nonOkCalls}, ${p.commandsPerCall.toFixed(1)} commands/call, spread ${p.spread.toFixed(2)}× (largest / smallest primary)`,
    );
    for (const x of p.primaries)
      print(
        `    ${x.node}: ${x.commands} commands (${(x.commandShare * 100).toFixed(1)}%), ${x.cpuMs.toFixed(0)} ms CPU, ${x.keys} keys, queues: ${x.queues.join(', ') || 'none'}`,
      );
  }
  const queues = (p: ShardsPoint) => p.primaries.reduce((n, x) => n + x.queues.length, 0);
  const [a, b] = [points[0], points[points.length - 1]];
  if (a && b && b.shards > a.shards && queues(b) <= queues(a))
    print(
      `  TD_QUEUE_SHARDS=${b.shards} made no more queues than ${a.shards} (${queues(b)}): the processes do not shard their queues yet`,
    );
  if (a && b && a !== b)
    print(
      `  ${b.shards} shards / ${a.shards}: ${(b.callsPerSec / a.callsPerSec).toFixed(2)}× calls/s, spread ${a.spread.toFixed(2)}× → ${b.spread.toFixed(2)}×`,
    );
}
