// `pnpm bench`: benchmarks reported as ratios against a baseline or peer run in the same process.
// BENCH_ONLY=embedded|distributed|limits|mcp|mcp-server|http|job-calls|shards|syscalls|acks|sandbox runs one of them; without it, all but
// shards (a Redis Cluster of its own, for TD_QUEUE_SHARDS) and acks (a primary and replica of its own, TD_REDIS_REPLICA_ACKS).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { benchAcks, printAcks } from './acks.js';
import { benchDistributed, distributedOptionsFromEnv } from './distributed.js';
import { benchEmbedded } from './embedded.js';
import { benchHttp, type HttpFigures, httpOptionsFromEnv, printHttp, writeHttpCharts } from './http.js';
import { benchJobCalls, jobCallsOptionsFromEnv, printJobCalls } from './http-job-calls.js';
import { benchLimits, limitsOptionsFromEnv, printLimits } from './limits.js';
import { benchMcp } from './mcp.js';
import { benchMcpServer, printMcpServer } from './mcp-server.js';
import { benchSandbox, printSandbox } from './sandbox.js';
import { benchShards, printShards, shardsOptionsFromEnv } from './shards.js';
import { benchSyscalls, printSyscalls, syscallsOptionsFromEnv } from './syscalls.js';

const progress = (s: string) => process.stderr.write(`  … ${s}\n`);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2000);
const only = process.env.BENCH_ONLY;

if (only === undefined || only === 'embedded') {
  const e = await benchEmbedded(rounds, progress);
  console.log('\nEmbedded mode: per-call cost of the three passes (rounds of 5 calls of a no-op tool)');
  console.log(`  engine     ${e.engineUsPerCall.toFixed(1)} µs/call`);
  console.log(`  baseline   ${e.baselineUsPerCall.toFixed(1)} µs/call  (ajv + p-limit(5) + Promise.all, no state)`);
  console.log(`  ratio      ${e.ratio.toFixed(1)}× the baseline`);
  console.log(`  heap       ${e.engineHeapKbPerRound.toFixed(2)} KiB retained per round (history, dedupe map)`);
}

if (only === undefined || only === 'distributed') {
  const d = await benchDistributed(distributedOptionsFromEnv(), progress);
  const { ours, peer, ratios, options } = d;
  const ms = (v: number) => `${v.toFixed(2)} ms`.padStart(10);
  const rate = (v: number) => `${v.toFixed(0)} calls/s`.padStart(14);
  console.log(
    `\nDistributed mode against plain BullMQ on the same Redis (rounds of 5 no-op calls, 2 workers × concurrency ${options.workerConcurrency})`,
  );
  console.log('                 round p50   round p99   50 runs at once   per call: Redis cmds, CPU node + redis');
  for (const [label, f] of [
    ['ours', ours],
    ['peer', peer],
  ] as const) {
    const cpu = `${f.nodeCpuUsPerCall.toFixed(0)} + ${f.redisCpuUsPerCall.toFixed(0)} µs`;
    console.log(
      `  ${label.padEnd(10)} ${ms(f.p50Ms)}  ${ms(f.p99Ms)}  ${rate(f.callsPerSec)}   ${f.commandsPerCall.toFixed(1).padStart(5)}, ${cpu}`,
    );
  }
  const x = (v: number, width: number) => `${v.toFixed(2)}×`.padStart(width);
  console.log(
    `  ours/peer  ${x(ratios.p50, 10)}  ${x(ratios.p99, 10)}  ${x(ratios.throughput, 14)}   node CPU ${x(ratios.cpu, 0)}`,
  );
  console.log('  (latency and CPU: below 1× is better than the peer; throughput: above 1× is more calls/s,');
  console.log('   the median of back-to-back slices)');
}

if (only === undefined || only === 'limits') {
  const d = distributedOptionsFromEnv();
  printLimits(await benchLimits(limitsOptionsFromEnv(process.env, d.workerConcurrency), progress));
}

if (only === undefined || only === 'mcp') {
  const m = await benchMcp(Number(process.env.BENCH_MCP_CALLS ?? 1000), progress);
  console.log(
    '\nMCP: an echo call of server-everything (stdio) through the three passes, against the SDK client calling it directly',
  );
  console.log(
    `  dispatcher ${m.dispatcherUsPerCall.toFixed(0)} µs/call  (embedded engine + McpHub, a new run per call)`,
  );
  console.log(`  direct     ${m.directUsPerCall.toFixed(0)} µs/call  (Client.callTool on a second server-everything)`);
  console.log(`  ratio      ${m.ratio.toFixed(2)}× the direct call`);
  console.log(
    `  schemas    ${m.deferredChars} chars sent with deferral (openai tools array + turn context) vs ${m.fullChars} chars of all ${m.tools} full definitions: ${(m.fullChars / m.deferredChars).toFixed(1)}× less`,
  );
}

if (only === undefined || only === 'sandbox')
  printSandbox(await benchSandbox(Number(process.env.BENCH_SANDBOX_CALLS ?? 200), progress));

if (only === undefined || only === 'mcp-server')
  printMcpServer(await benchMcpServer(Number(process.env.BENCH_MCP_SERVER_CALLS ?? 1000), progress));

if (only === undefined || only === 'http') printHttp(await benchHttp(httpOptionsFromEnv(), progress));

// TD_JOB_CALLS on, off and the peer in one run: the full matrix alone, a short form inside the whole bench.
if (only === undefined || only === 'job-calls')
  printJobCalls(await benchJobCalls(jobCallsOptionsFromEnv(process.env, only === undefined), progress));

// BENCH_ONLY=http-print: the tables of the last HTTP run again, and its charts redrawn, from bench/results/http.json.
if (only === 'http-print') {
  const file = path.join(httpOptionsFromEnv().resultsDir, 'http.json');
  const figures = JSON.parse(readFileSync(file, 'utf8')) as HttpFigures;
  writeHttpCharts(figures, path.dirname(file));
  printHttp(figures);
}

if (only === 'shards') {
  const http = httpOptionsFromEnv();
  printShards(await benchShards(shardsOptionsFromEnv(process.env, http.resultsDir, http.workerConcurrency), progress));
}

// BENCH_ONLY=syscalls: system calls per round of every process of both sides at one session (needs strace).
if (only === 'syscalls') printSyscalls(await benchSyscalls(syscallsOptionsFromEnv(), progress));

// BENCH_ONLY=acks: the cost of TD_REDIS_REPLICA_ACKS=1 against 0 per round, in one run.
if (only === 'acks') {
  const d = distributedOptionsFromEnv();
  printAcks(
    await benchAcks(
      { rounds: Math.min(d.latencyRounds, 500), throughputMs: d.throughputMs, concurrency: d.workerConcurrency },
      progress,
    ),
  );
}

// Every bench above closed what it started and printed its tables; a handle a library leaves open
// (seen after the distributed and limits benches) must not keep `pnpm bench` waiting. stdout and
// stderr are synchronous for files and pipes on Linux, so nothing printed is cut.
process.exit(0);
