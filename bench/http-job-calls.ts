// BENCH_ONLY=job-calls: calls per queue job (TD_JOB_CALLS, issue 31) at the HTTP interface, in one
// run, three sides on one redis-server this bench spawns: the project with batching on (the
// default, the concurrent calls admitted in one tick share a BullMQ job), the project with it off
// (TD_JOB_CALLS=1, a job per call, as before) and the peer (bench/http-peer.ts: a hand-written
// dispatcher, addBulk of a job per call + waitUntilFinished), each a front and 2 workers of the
// same concurrency. At each point (sessions × round size) each side warms up, then the sides take
// turns in rotating order (on, off, peer; off, peer, on; …) so drift hits all three. Per side:
// calls/s, p50/p99, non-ok, CPU per call of every process (/proc) and Redis commands per call.
// Results: bench/results/job-calls.json.

import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';
import {
  type Bench,
  type HttpOptions,
  httpOptionsFromEnv,
  measureSlice,
  median,
  type SideSummary,
  type SliceRecord,
  summarize,
} from './http.js';
import { ensureSessions, LoadClient, runSlice } from './http-load.js';
import { type Stack, startOursStack, startPeerStack } from './http-stacks.js';

export const JOB_CALLS_SIDES = ['on', 'off', 'peer'] as const;
export type JobCallsSide = (typeof JOB_CALLS_SIDES)[number];

export interface JobCallsOptions {
  sessions: number[];
  roundSizes: number[];
  /** Measured time per side at each point, in ms, in `slicesPerSide` slices. */
  msPerSide: number;
  slicesPerSide: number;
  http: HttpOptions;
}

/**
 * The full matrix (1, 10, 100, 1000 sessions × rounds of 1, 5, 20) for BENCH_ONLY=job-calls; `short`
 * (inside a whole `pnpm bench`): 10 and 100 sessions × rounds of 1 and 5, unless the env says.
 */
export function jobCallsOptionsFromEnv(env: NodeJS.ProcessEnv = process.env, short = false): JobCallsOptions {
  const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((x) => Number(x.trim()));
  return {
    sessions: list(env.BENCH_JOB_CALLS_SESSIONS, short ? '10,100' : '1,10,100,1000'),
    roundSizes: list(env.BENCH_JOB_CALLS_SIZES, short ? '1,5' : '1,5,20'),
    msPerSide: Number(env.BENCH_JOB_CALLS_MS ?? 4_000),
    slicesPerSide: Number(env.BENCH_JOB_CALLS_SLICES ?? 2),
    http: httpOptionsFromEnv(env),
  };
}

export interface JobCallsPoint {
  sessions: number;
  roundSize: number;
  sides: Record<JobCallsSide, SideSummary>;
  /** Calls/s as the median of the ratios of slices taken in the same turn; p99 and CPU over all slices. */
  ratios: {
    onPerPeer: number;
    offPerPeer: number;
    onPerOff: number;
    p99OnPerPeer: number;
    cpuOnPerPeer: number;
    cpuOnPerOff: number;
  };
}

export interface JobCallsFigures {
  options: Omit<JobCallsOptions, 'http'> & { workerConcurrency: number };
  loadAverage: { start: number[]; end: number[] };
  startedAt: string;
  points: JobCallsPoint[];
}

/** Warm-up on each side, then `slicesPerSide` turns, the order rotating each turn. */
async function measurePoint(
  bench: Bench,
  stacks: Record<JobCallsSide, Stack>,
  options: JobCallsOptions,
  point: { sessions: number; roundSize: number },
): Promise<JobCallsPoint> {
  for (const side of JOB_CALLS_SIDES) await ensureSessions(bench.client, stacks[side], point.sessions);
  const run = `jc${bench.runCounter++}`;
  const sliceMs = options.msPerSide / options.slicesPerSide;
  const timeoutMs = options.http.timeoutMs;
  const warm = { ...point, ms: Math.min(sliceMs, 1_500), run, timeoutMs };
  const warmups = {} as Record<JobCallsSide, Awaited<ReturnType<typeof runSlice>>>;
  for (const side of JOB_CALLS_SIDES) warmups[side] = await runSlice(bench.client, stacks[side], warm);
  const slices: Record<JobCallsSide, SliceRecord[]> = { on: [], off: [], peer: [] };
  for (let k = 0; k < options.slicesPerSide; k++) {
    const order = JOB_CALLS_SIDES.map((_, i) => JOB_CALLS_SIDES[(i + k) % JOB_CALLS_SIDES.length] as JobCallsSide);
    for (const side of order)
      slices[side].push(await measureSlice(bench, stacks[side], point.sessions, point.roundSize, sliceMs, run));
  }
  const sides = {} as Record<JobCallsSide, SideSummary>;
  for (const side of JOB_CALLS_SIDES) sides[side] = summarize(slices[side], warmups[side]);
  const rate = (s: SliceRecord) => s.load.calls / s.load.elapsedMs;
  const paired = (a: JobCallsSide, b: JobCallsSide) =>
    median(slices[a].map((s, k) => rate(s) / rate(slices[b][k] as SliceRecord)));
  return {
    ...point,
    sides,
    ratios: {
      onPerPeer: paired('on', 'peer'),
      offPerPeer: paired('off', 'peer'),
      onPerOff: paired('on', 'off'),
      p99OnPerPeer: sides.on.p99Ms / sides.peer.p99Ms,
      cpuOnPerPeer: sides.on.totalCpuUsPerCall / sides.peer.totalCpuUsPerCall,
      cpuOnPerOff: sides.on.totalCpuUsPerCall / sides.off.totalCpuUsPerCall,
    },
  };
}

async function startSides(redisUrl: string, workerConcurrency: number): Promise<Record<JobCallsSide, Stack>> {
  const base = { redisUrl, workers: 2, workerConcurrency };
  const started: Stack[] = [];
  try {
    const on = await startOursStack({ ...base, prefix: 'bench-jc-on' });
    started.push(on);
    const off = await startOursStack({ ...base, prefix: 'bench-jc-off', env: { TD_JOB_CALLS: '1' } });
    started.push(off);
    const peer = await startPeerStack({ ...base, prefix: 'bench-jc-peer' });
    return { on, off, peer };
  } catch (e) {
    await Promise.all(started.map((s) => s.stop()));
    throw e;
  }
}

export async function benchJobCalls(options: JobCallsOptions, progress: (s: string) => void): Promise<JobCallsFigures> {
  const figures: JobCallsFigures = {
    options: {
      sessions: options.sessions,
      roundSizes: options.roundSizes,
      msPerSide: options.msPerSide,
      slicesPerSide: options.slicesPerSide,
      workerConcurrency: options.http.workerConcurrency,
    },
    loadAverage: { start: loadavg(), end: [] },
    startedAt: new Date().toISOString(),
    points: [],
  };
  const server = await spawnRedisServer();
  const redis = new Redis(server.url);
  const client = new LoadClient(Math.max(...options.sessions));
  const bench: Bench = { options: options.http, redis, client, progress, runCounter: 0 };
  try {
    progress('starting the project with batching on, with TD_JOB_CALLS=1, and the peer (a front + 2 workers each)');
    const stacks = await startSides(server.url, options.http.workerConcurrency);
    try {
      for (const sessions of options.sessions)
        for (const roundSize of options.roundSizes) {
          const p = await measurePoint(bench, stacks, options, { sessions, roundSize });
          figures.points.push(p);
          progress(pointLine(p));
        }
    } finally {
      await Promise.all(JOB_CALLS_SIDES.map((side) => stacks[side].stop()));
    }
  } finally {
    client.close();
    redis.disconnect();
    const keepAlive = setInterval(() => undefined, 1_000);
    await server.stop().finally(() => clearInterval(keepAlive));
  }
  figures.loadAverage.end = loadavg();
  mkdirSync(options.http.resultsDir, { recursive: true });
  writeFileSync(path.join(options.http.resultsDir, 'job-calls.json'), `${JSON.stringify(figures, null, 2)}\n`);
  return figures;
}

function pointLine(p: JobCallsPoint): string {
  const side = (s: JobCallsSide) =>
    `${s} ${p.sides[s].callsPerSec.toFixed(0)}/s p99 ${p.sides[s].p99Ms.toFixed(1)} cpu ${p.sides[s].totalCpuUsPerCall.toFixed(0)} non-ok ${p.sides[s].nonOkCalls}`;
  return `${p.sessions} sessions × ${p.roundSize}: ${JOB_CALLS_SIDES.map(side).join('; ')}; on/peer ${p.ratios.onPerPeer.toFixed(2)}×`;
}

/** The figures as `pnpm bench` prints them: one line per side and point, then the ratios. */
export function printJobCalls(f: JobCallsFigures, print: (line: string) => void = console.log): void {
  print('\nCalls per queue job (TD_JOB_CALLS) at the HTTP interface: batching on (default), off (=1), and the peer');
  print(
    `  2 workers × concurrency ${f.options.workerConcurrency} per side, ${f.options.msPerSide} ms per side and point; load average at start ${f.loadAverage.start.map((x) => x.toFixed(2)).join(' ')}, at end ${f.loadAverage.end.map((x) => x.toFixed(2)).join(' ')}`,
  );
  print('  point               side   calls/s   p50 ms   p99 ms  non-ok  CPU µs/call  cmds/call');
  for (const p of f.points) {
    for (const side of JOB_CALLS_SIDES) {
      const v = p.sides[side];
      print(
        `  ${`${p.sessions} s × ${p.roundSize}`.padEnd(18)} ${side.padEnd(5)} ${v.callsPerSec.toFixed(0).padStart(8)} ${v.p50Ms.toFixed(1).padStart(8)} ${v.p99Ms.toFixed(1).padStart(8)} ${String(v.nonOkCalls).padStart(7)} ${v.totalCpuUsPerCall.toFixed(0).padStart(12)} ${v.redis.commandsPerCall.toFixed(1).padStart(10)}`,
      );
    }
    const r = p.ratios;
    print(
      `  ${''.padEnd(18)} on/peer ${r.onPerPeer.toFixed(2)}×  off/peer ${r.offPerPeer.toFixed(2)}×  on/off ${r.onPerOff.toFixed(2)}×  p99 on/peer ${r.p99OnPerPeer.toFixed(2)}×  CPU on/peer ${r.cpuOnPerPeer.toFixed(2)}×  on/off ${r.cpuOnPerOff.toFixed(2)}×`,
    );
  }
  print('  (calls/s: above 1× is better; p99 and CPU per call: below 1× is better)');
}
