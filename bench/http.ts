// BENCH_ONLY=http: the project at its HTTP interface (`tool-dispatch coordinator` + N × `tool-dispatch
// worker`, real processes) against a hand-written dispatcher over plain BullMQ (bench/http-peer.ts,
// N peer workers with the same concurrency), both on one redis-server this bench spawns, under the
// same load: rounds of `calculate` calls from S sessions at once. Slices alternate between the sides
// (ABBA…) so drift from the rest of the machine hits both. Per side: calls/s, round p50/p99, non-ok
// results, CPU per call of every process (/proc), Redis commands and bytes per call, and the
// coordinator's memory under load. Results: bench/results/http.json and bench/results/http-*.svg.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { DEFAULT_WORKER_CONCURRENCY } from '@tool-dispatch/shared';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';
import { ensureSessions, LoadClient, quantile, runSlice, type SliceResult } from './http-load.js';
import { cpuMsOf, ROOT, rssKibOf } from './http-procs.js';
import { type SideName, type Stack, type StackOptions, startOursStack, startPeerStack } from './http-stacks.js';
import { diffRedis, type RedisSample, sampleRedis } from './redis-stats.js';
import { type ChartSeries, lineChartSvg } from './svg-chart.js';

export interface HttpOptions {
  /** Measured time per side at each point, in ms, split into `slicesPerSide` slices. */
  msPerSide: number;
  slicesPerSide: number;
  sessions: number[];
  roundSizes: number[];
  /** Sessions of the round-size and worker-count parts. */
  partSessions: number;
  workerCounts: number[];
  workerConcurrency: number;
  timeoutMs: number;
  parts: string[];
  /** Where the JSON and SVG files go. */
  resultsDir: string;
}

export function httpOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): HttpOptions {
  const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((x) => Number(x.trim()));
  return {
    msPerSide: Number(env.BENCH_HTTP_MS ?? 8_000),
    slicesPerSide: Number(env.BENCH_HTTP_SLICES ?? 4),
    sessions: list(env.BENCH_HTTP_SESSIONS, '1,10,100,1000,5000'),
    roundSizes: list(env.BENCH_HTTP_SIZES, '1,5,20,50'),
    partSessions: Number(env.BENCH_HTTP_PART_SESSIONS ?? 100),
    workerCounts: list(env.BENCH_HTTP_WORKERS, '1,2,4'),
    workerConcurrency: Number(env.TD_WORKER_CONCURRENCY ?? DEFAULT_WORKER_CONCURRENCY),
    timeoutMs: Number(env.BENCH_HTTP_TIMEOUT_MS ?? 60_000),
    parts: (env.BENCH_HTTP_PARTS ?? 'sessions,sizes,workers').split(','),
    resultsDir: env.BENCH_RESULTS_DIR ?? path.join(ROOT, 'bench', 'results'),
  };
}

export interface SideSummary {
  rounds: number;
  calls: number;
  /** Over every measured slice, drains included. */
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Results by status (`ok` included) over the measured slices. */
  statuses: Record<string, number>;
  nonOkCalls: number;
  /** Non-ok results of the warm-up slice (not in the figures, not hidden either). */
  warmupNonOkCalls: number;
  /** CPU per call in µs, by process (the side's processes, `redis-server`, `load generator`). */
  cpuUsPerCall: Record<string, number>;
  /** The side's own processes plus redis-server, without the load generator. */
  totalCpuUsPerCall: number;
  redis: { commandsPerCall: number; netInBytesPerCall: number; netOutBytesPerCall: number; keysAdded: number };
  /** The 8 commands Redis ran most, per call. */
  topCommandsPerCall: Record<string, number>;
  /** The front process (coordinator or peer server) half-way through each slice: the largest sample. */
  frontMemory: { rssKib: number; heapUsedKib: number | null };
}

export interface PointResult {
  sessions: number;
  roundSize: number;
  workers: number;
  ours: SideSummary;
  peer: SideSummary;
  /** ours / peer. `callsPerSec` is the median of the ratios of paired slices; the others are over all slices. */
  ratios: { callsPerSec: number; p50: number; p99: number; totalCpuPerCall: number };
}

export interface SliceRecord {
  load: SliceResult;
  cpuMs: Record<string, number>;
  redis: RedisSample;
  memory: { rssKib: number; heapUsedKib: number | null };
}

export interface Bench {
  options: HttpOptions;
  redis: Redis;
  client: LoadClient;
  progress: (s: string) => void;
  runCounter: number;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? Number.NaN
    : ((s[Math.floor((s.length - 1) / 2)] as number) + (s[Math.ceil((s.length - 1) / 2)] as number)) / 2;
};

/** The front's V8 heap in use, from its /metrics (prom-client's default metrics); null for the peer. */
async function heapUsedKib(stack: Stack): Promise<number | null> {
  if (stack.side !== 'ours') return null;
  try {
    const text = await (await fetch(`http://127.0.0.1:${stack.port}/metrics`)).text();
    const m = /^nodejs_heap_size_used_bytes (\S+)/m.exec(text);
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

export async function measureSlice(
  bench: Bench,
  stack: Stack,
  sessions: number,
  roundSize: number,
  ms: number,
  run: string,
) {
  const procs = [stack.front, ...stack.workers];
  const cpu0 = procs.map((p) => cpuMsOf(p.pid));
  const redis0 = await sampleRedis(bench.redis);
  let memory: Promise<SliceRecord['memory']> = Promise.resolve({
    rssKib: rssKibOf(stack.front.pid),
    heapUsedKib: null,
  });
  const load = await runSlice(bench.client, stack, {
    sessions,
    roundSize,
    ms,
    run,
    timeoutMs: bench.options.timeoutMs,
    midway: () => {
      const rssKib = rssKibOf(stack.front.pid);
      memory = heapUsedKib(stack).then((heap) => ({ rssKib, heapUsedKib: heap }));
    },
  });
  const redis = diffRedis(redis0, await sampleRedis(bench.redis));
  const cpuMs: Record<string, number> = {};
  procs.forEach((p, i) => {
    cpuMs[p.label] = cpuMsOf(p.pid) - (cpu0[i] as number);
  });
  cpuMs['redis-server'] = redis.cpuMs;
  cpuMs['load generator'] = load.loadGenCpuMs;
  return { load, cpuMs, redis, memory: await memory } satisfies SliceRecord;
}

export function summarize(slices: SliceRecord[], warmup: SliceResult): SideSummary {
  const calls = slices.reduce((n, s) => n + s.load.calls, 0);
  const elapsedMs = slices.reduce((n, s) => n + s.load.elapsedMs, 0);
  const latencies = slices.flatMap((s) => s.load.latenciesMs).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const s of slices) for (const [k, v] of Object.entries(s.load.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  const nonOk = (st: Record<string, number>) => Object.entries(st).reduce((n, [k, v]) => n + (k === 'ok' ? 0 : v), 0);
  const cpuUsPerCall: Record<string, number> = {};
  for (const s of slices)
    for (const [k, v] of Object.entries(s.cpuMs)) cpuUsPerCall[k] = (cpuUsPerCall[k] ?? 0) + (v * 1000) / calls;
  const sum = (f: (r: RedisSample) => number) => slices.reduce((n, s) => n + f(s.redis), 0);
  const byCommand: Record<string, number> = {};
  for (const s of slices)
    for (const [k, v] of Object.entries(s.redis.byCommand)) byCommand[k] = (byCommand[k] ?? 0) + v;
  const top = Object.entries(byCommand)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 30);
  const heaps = slices.map((s) => s.memory.heapUsedKib).filter((h): h is number => h !== null);
  return {
    rounds: slices.reduce((n, s) => n + s.load.rounds, 0),
    calls,
    callsPerSec: (calls / elapsedMs) * 1000,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies[latencies.length - 1] ?? Number.NaN,
    statuses,
    nonOkCalls: nonOk(statuses),
    warmupNonOkCalls: nonOk(warmup.statuses),
    cpuUsPerCall,
    totalCpuUsPerCall: Object.entries(cpuUsPerCall).reduce((n, [k, v]) => n + (k === 'load generator' ? 0 : v), 0),
    redis: {
      commandsPerCall: sum((r) => r.commands) / calls,
      netInBytesPerCall: sum((r) => r.netInBytes) / calls,
      netOutBytesPerCall: sum((r) => r.netOutBytes) / calls,
      keysAdded: sum((r) => r.keys),
    },
    topCommandsPerCall: Object.fromEntries(top.map(([k, v]) => [k, v / calls])),
    frontMemory: {
      rssKib: Math.max(...slices.map((s) => s.memory.rssKib)),
      heapUsedKib: heaps.length > 0 ? Math.max(...heaps) : null,
    },
  };
}

/** One point of a curve: warm-up on each side, then ABBA… slices, paired for the throughput ratio. */
async function measurePoint(
  bench: Bench,
  stacks: Record<SideName, Stack>,
  point: { sessions: number; roundSize: number; workers: number },
): Promise<PointResult> {
  const { options, client } = bench;
  await Promise.all([
    ensureSessions(client, stacks.ours, point.sessions),
    ensureSessions(client, stacks.peer, point.sessions),
  ]);
  const run = `r${bench.runCounter++}`;
  // From 1000 sessions on a round takes seconds (sessions ÷ calls/s): fewer, longer slices.
  const slicesPerSide = point.sessions >= 1000 ? Math.min(2, options.slicesPerSide) : options.slicesPerSide;
  const sliceMs = options.msPerSide / slicesPerSide;
  const warmMs = Math.min(sliceMs, 2_000);
  const warmup = {
    ours: await runSlice(client, stacks.ours, { ...point, ms: warmMs, run, timeoutMs: options.timeoutMs }),
    peer: await runSlice(client, stacks.peer, { ...point, ms: warmMs, run, timeoutMs: options.timeoutMs }),
  };
  const slices: Record<SideName, SliceRecord[]> = { ours: [], peer: [] };
  for (let k = 0; k < slicesPerSide; k++) {
    const order: SideName[] = k % 2 === 0 ? ['ours', 'peer'] : ['peer', 'ours'];
    for (const side of order)
      slices[side].push(await measureSlice(bench, stacks[side], point.sessions, point.roundSize, sliceMs, run));
  }
  const ours = summarize(slices.ours, warmup.ours);
  const peer = summarize(slices.peer, warmup.peer);
  const rate = (s: SliceRecord) => s.load.calls / s.load.elapsedMs;
  const paired = slices.ours.map((s, k) => rate(s) / rate(slices.peer[k] as SliceRecord));
  const result: PointResult = {
    ...point,
    ours,
    peer,
    ratios: {
      callsPerSec: median(paired),
      p50: ours.p50Ms / peer.p50Ms,
      p99: ours.p99Ms / peer.p99Ms,
      totalCpuPerCall: ours.totalCpuUsPerCall / peer.totalCpuUsPerCall,
    },
  };
  bench.progress(
    `${point.sessions} sessions × ${point.roundSize} calls, ${point.workers} workers: ours ${ours.callsPerSec.toFixed(0)} calls/s p50 ${ours.p50Ms.toFixed(1)} p99 ${ours.p99Ms.toFixed(1)} non-ok ${ours.nonOkCalls}; peer ${peer.callsPerSec.toFixed(0)} calls/s p50 ${peer.p50Ms.toFixed(1)} p99 ${peer.p99Ms.toFixed(1)} non-ok ${peer.nonOkCalls}; ${result.ratios.callsPerSec.toFixed(2)}×`,
  );
  return result;
}

async function startStacks(redisUrl: string, options: HttpOptions, workers: number, tag: string) {
  const base: Omit<StackOptions, 'prefix'> = { redisUrl, workers, workerConcurrency: options.workerConcurrency };
  const ours = await startOursStack({ ...base, prefix: `bench-http-${tag}` });
  const peer = await startPeerStack({ ...base, prefix: `bench-peer-${tag}` }).catch(async (e) => {
    await ours.stop();
    throw e;
  });
  return { ours, peer };
}

async function stopStacks(stacks: Record<SideName, Stack>) {
  await Promise.all([stacks.ours.stop(), stacks.peer.stop()]);
}

export interface HttpFigures {
  options: HttpOptions;
  machine: {
    cpus: number;
    node: string;
    redis: string;
    loadAverageAtStart: number[];
    loadAverageAtEnd: number[];
    startedAt: string;
  };
  /** The coordinator's memory before any round (its sessions not yet created). */
  idleCoordinator: { rssKib: number; heapUsedKib: number | null } | null;
  sessions: PointResult[];
  roundSizes: PointResult[];
  workers: PointResult[];
}

export async function benchHttp(options: HttpOptions, progress: (s: string) => void): Promise<HttpFigures> {
  const figures: HttpFigures = {
    options,
    machine: {
      cpus: Number(execFileSync('nproc').toString().trim()),
      node: process.version,
      redis: execFileSync('redis-server', ['--version']).toString().trim(),
      loadAverageAtStart: loadavg(),
      loadAverageAtEnd: [],
      startedAt: new Date().toISOString(),
    },
    idleCoordinator: null,
    sessions: [],
    roundSizes: [],
    workers: [],
  };
  const server = await spawnRedisServer();
  const redis = new Redis(server.url);
  const maxSessions = Math.max(...options.sessions, options.partSessions);
  const bench: Bench = { options, redis, client: new LoadClient(maxSessions), progress, runCounter: 0 };
  try {
    const wantsMain = options.parts.includes('sessions') || options.parts.includes('sizes');
    if (wantsMain) {
      progress('starting the project (coordinator + 2 workers) and the peer (server + 2 workers)');
      const stacks = await startStacks(server.url, options, 2, 'main');
      try {
        figures.idleCoordinator = {
          rssKib: rssKibOf(stacks.ours.front.pid),
          heapUsedKib: await heapUsedKib(stacks.ours),
        };
        if (options.parts.includes('sessions'))
          for (const sessions of options.sessions)
            figures.sessions.push(await measurePoint(bench, stacks, { sessions, roundSize: 5, workers: 2 }));
        if (options.parts.includes('sizes'))
          for (const roundSize of options.roundSizes)
            figures.roundSizes.push(
              await measurePoint(bench, stacks, { sessions: options.partSessions, roundSize, workers: 2 }),
            );
      } finally {
        await stopStacks(stacks);
      }
    }
    if (options.parts.includes('workers'))
      for (const workers of options.workerCounts) {
        await redis.flushall();
        progress(`starting both sides with ${workers} worker(s) each`);
        const stacks = await startStacks(server.url, options, workers, `w${workers}`);
        try {
          figures.workers.push(
            await measurePoint(bench, stacks, { sessions: options.partSessions, roundSize: 5, workers }),
          );
        } finally {
          await stopStacks(stacks);
        }
      }
  } finally {
    bench.client.close();
    redis.disconnect();
    // The spawned redis-server is unref'd: without a handle of ours the loop would end mid-stop.
    const keepAlive = setInterval(() => undefined, 1_000);
    await server.stop().finally(() => clearInterval(keepAlive));
  }
  figures.machine.loadAverageAtEnd = loadavg();
  writeResults(figures);
  return figures;
}

function writeResults(figures: HttpFigures): void {
  mkdirSync(figures.options.resultsDir, { recursive: true });
  writeFileSync(path.join(figures.options.resultsDir, 'http.json'), `${JSON.stringify(figures, null, 2)}\n`);
  writeHttpCharts(figures, figures.options.resultsDir);
}

/** The SVG charts of a run's figures, into `dir`. */
export function writeHttpCharts(figures: HttpFigures, dir: string): void {
  const both = (points: PointResult[], x: (p: PointResult) => number, y: (s: SideSummary) => number, what = '') =>
    (['ours', 'peer'] as const).map(
      (side): ChartSeries => ({
        name: `${side === 'ours' ? 'project' : 'peer'}${what}`,
        dashed: side === 'peer',
        points: points.map((p) => ({ x: x(p), y: y(p[side]) })),
      }),
    );
  const svg = (name: string, body: string) => writeFileSync(path.join(dir, name), body);
  const s = figures.sessions;
  if (s.length > 0) {
    svg(
      'http-calls-per-s.svg',
      lineChartSvg({
        title: 'Throughput at the HTTP interface (rounds of 5 calculate calls)',
        xLabel: 'concurrent sessions',
        yLabel: 'calls/s',
        logX: true,
        series: both(
          s,
          (p) => p.sessions,
          (v) => v.callsPerSec,
        ),
      }),
    );
    svg(
      'http-latency.svg',
      lineChartSvg({
        title: 'Round latency at the HTTP interface',
        xLabel: 'concurrent sessions',
        yLabel: 'ms per round',
        logX: true,
        logY: true,
        series: [
          ...both(
            s,
            (p) => p.sessions,
            (v) => v.p50Ms,
            ' p50',
          ),
          ...both(
            s,
            (p) => p.sessions,
            (v) => v.p99Ms,
            ' p99',
          ),
        ],
      }),
    );
    const labels = [...new Set(s.flatMap((p) => Object.keys(p.ours.cpuUsPerCall)))].filter(
      (l) => !l.startsWith('load'),
    );
    const peerLabels = [...new Set(s.flatMap((p) => Object.keys(p.peer.cpuUsPerCall)))].filter(
      (l) => !l.startsWith('load'),
    );
    svg(
      'http-cpu-per-call.svg',
      lineChartSvg({
        title: 'CPU per call, by process',
        xLabel: 'concurrent sessions',
        yLabel: 'µs of CPU per call',
        logX: true,
        series: [
          ...labels.map((l) => ({
            name: l,
            points: s.map((p) => ({ x: p.sessions, y: p.ours.cpuUsPerCall[l] ?? Number.NaN })),
          })),
          ...peerLabels.map((l) => ({
            name: l === 'redis-server' ? 'redis-server (peer)' : l,
            dashed: true,
            points: s.map((p) => ({ x: p.sessions, y: p.peer.cpuUsPerCall[l] ?? Number.NaN })),
          })),
        ],
      }),
    );
  }
  if (figures.roundSizes.length > 0)
    svg(
      'http-round-size.svg',
      lineChartSvg({
        title: `CPU per call by round size (${figures.options.partSessions} sessions, all processes but the load generator)`,
        xLabel: 'calls per round',
        yLabel: 'µs of CPU per call',
        logX: true,
        series: both(
          figures.roundSizes,
          (p) => p.roundSize,
          (v) => v.totalCpuUsPerCall,
        ),
      }),
    );
  if (figures.workers.length > 0)
    svg(
      'http-workers.svg',
      lineChartSvg({
        title: `Throughput by worker processes (${figures.options.partSessions} sessions, rounds of 5)`,
        xLabel: 'worker processes per side',
        yLabel: 'calls/s',
        series: both(
          figures.workers,
          (p) => p.workers,
          (v) => v.callsPerSec,
        ),
      }),
    );
}

/** The figures as the lines `pnpm bench` prints. */
export function printHttp(f: HttpFigures, print: (line: string) => void = console.log): void {
  const us = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(0));
  const table = (title: string, points: PointResult[], key: (p: PointResult) => string) => {
    if (points.length === 0) return;
    print(`\n${title}`);
    print(
      '  point            side   calls/s   p50 ms   p99 ms  non-ok  CPU µs/call (total: per process)            cmds/call  bytes in/call',
    );
    for (const p of points) {
      for (const side of ['ours', 'peer'] as const) {
        const v = p[side];
        const per = Object.entries(v.cpuUsPerCall)
          .map(([k, x]) => `${k} ${us(x)}`)
          .join(', ');
        print(
          `  ${key(p).padEnd(16)} ${side}  ${v.callsPerSec.toFixed(0).padStart(8)} ${v.p50Ms.toFixed(1).padStart(8)} ${v.p99Ms.toFixed(1).padStart(8)} ${String(v.nonOkCalls).padStart(7)}  ${us(v.totalCpuUsPerCall)}: ${per}  ${v.redis.commandsPerCall.toFixed(1)}  ${v.redis.netInBytesPerCall.toFixed(0)}`,
        );
      }
      const r = p.ratios;
      print(
        `  ${''.padEnd(16)} ours/peer  ${r.callsPerSec.toFixed(2)}×  p50 ${r.p50.toFixed(2)}×  p99 ${r.p99.toFixed(2)}×  CPU/call ${r.totalCpuPerCall.toFixed(2)}×`,
      );
    }
  };
  print(
    `\nHTTP interface: the project (coordinator + workers, processes) against plain BullMQ behind a hand-written server`,
  );
  print(
    `  load average at start ${f.machine.loadAverageAtStart.map((x) => x.toFixed(2)).join(' ')}, at end ${f.machine.loadAverageAtEnd.map((x) => x.toFixed(2)).join(' ')}`,
  );
  table(
    'Concurrent sessions (rounds of 5 calculate calls, 2 workers per side)',
    f.sessions,
    (p) => `${p.sessions} sessions`,
  );
  table(`Round size (${f.options.partSessions} sessions, 2 workers)`, f.roundSizes, (p) => `${p.roundSize} calls`);
  table(`Worker processes (${f.options.partSessions} sessions, rounds of 5)`, f.workers, (p) => `${p.workers} workers`);
  for (const line of roundCostLines(f.roundSizes)) print(line);
  const idle = f.idleCoordinator;
  if (idle?.heapUsedKib != null)
    for (const p of f.sessions) {
      const heap = p.ours.frontMemory.heapUsedKib;
      if (heap === null) continue;
      print(
        `  coordinator at ${p.sessions} sessions: heap ${(heap / 1024).toFixed(1)} MiB (+${((heap - idle.heapUsedKib) / p.sessions).toFixed(1)} KiB/session), RSS ${(p.ours.frontMemory.rssKib / 1024).toFixed(0)} MiB (+${((p.ours.frontMemory.rssKib - idle.rssKib) / p.sessions).toFixed(1)} KiB/session)`,
      );
    }
  print('  (ratios ours / peer: calls/s above 1× is better; latency and CPU below 1× is better)');
}

/** Least-squares `y = a + b·x`. */
export function fitLine(xs: readonly number[], ys: readonly number[]): { a: number; b: number } {
  const n = xs.length;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  xs.forEach((x, i) => {
    sxy += (x - mx) * ((ys[i] as number) - my);
    sxx += (x - mx) ** 2;
  });
  const b = sxx === 0 ? 0 : sxy / sxx;
  return { a: my - b * mx, b };
}

/**
 * CPU per round = a + b × calls, fitted over the round sizes, per side and process: `a` is what a
 * round costs whatever its size, `b` what each call adds (the per-call floor as rounds grow).
 */
export function roundCosts(points: readonly PointResult[]) {
  if (points.length < 2) return [];
  const sizes = points.map((p) => p.roundSize);
  return (['ours', 'peer'] as const).map((side) => {
    const labels = Object.keys(points[0]?.[side].cpuUsPerCall ?? {});
    const perRound = (l: string) => points.map((p) => (p[side].cpuUsPerCall[l] ?? 0) * p.roundSize);
    const total = fitLine(
      sizes,
      points.map((p) => p[side].totalCpuUsPerCall * p.roundSize),
    );
    return { side, total, byProcess: Object.fromEntries(labels.map((l) => [l, fitLine(sizes, perRound(l))])) };
  });
}

function roundCostLines(points: readonly PointResult[]): string[] {
  return roundCosts(points).map(
    (c) =>
      `  ${c.side} CPU per round ≈ ${c.total.a.toFixed(0)} µs + ${c.total.b.toFixed(0)} µs × calls (${Object.entries(
        c.byProcess,
      )
        .map(([l, f]) => `${l} ${f.a.toFixed(0)} + ${f.b.toFixed(0)}×`)
        .join(', ')})`,
  );
}
