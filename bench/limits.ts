// BENCH_ONLY=limits: TD_LIMITS in one run, on one redis-server, in this process (API.md "Limits
// that queue instead of failing"). (1) A tool limited to BENCH_LIMITS_RATE (default "20/s") driven
// well above it by 10 runs of rounds of 5 for BENCH_LIMITS_RATE_MS: the start rate its handler
// sees against the configured one. (2) The unlimited no-op round of the distributed bench on an
// engine with that TD_LIMITS against one without (two prefixes, latency blocks and 50-run
// throughput slices alternating between them): what TD_LIMITS costs a call it does not limit.
import { parseNamedLimits } from '@tool-dispatch/coordinator';
import type { ToolDefinition } from '@tool-dispatch/shared';
import { spawnRedisServer } from '../test/support/redis.js';
import { latencyBlock, type Side, startOurs, throughputBlock } from './distributed.js';

export interface LimitsOptions {
  /** The limited tool's rate, as TD_LIMITS spells it. */
  rate: string;
  /** How long the limited tool is driven above its rate, in ms. */
  rateMs: number;
  /** Measured one-run rounds per side of the overhead part. */
  rounds: number;
  /** Length of the 50-run throughput test per side, in ms (in slices). */
  throughputMs: number;
  concurrency: number;
}

export interface LimitsFigures {
  rate: {
    /** The rate's count (per window). */
    count: number;
    configuredPerSec: number;
    measuredPerSec: number;
    /** measured / configured: 1 is the limit held exactly; below it, starts lost to the waits' wake-ups. */
    ratio: number;
    starts: number;
    /** Calls that ended otherwise than ok (rate_limited past maxWaitMs): none expected. */
    notOk: number;
    /** The shortest time between a start and the `count`-th after it, as the handler saw them (the window, less the queue's jitter). */
    minSpanMs: number;
  };
  overhead: {
    p50Ms: { without: number; with: number };
    callsPerSec: { without: number; with: number };
    /** With TD_LIMITS over without: latency (above 1× is slower), throughput (below 1× is fewer calls/s). */
    ratios: { p50: number; throughput: number };
  };
}

const LIMITED: ToolDefinition = {
  name: 'bench_limited',
  description: 'no-op under a rate limit',
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
  concurrency: 'concurrent',
};
const DRIVERS = 10;
const ROUND = 5;
const BLOCK = 50;
const SLICES = 6;

export function limitsOptionsFromEnv(env: NodeJS.ProcessEnv, concurrency: number): LimitsOptions {
  return {
    rate: env.BENCH_LIMITS_RATE ?? '20/s',
    rateMs: Number(env.BENCH_LIMITS_RATE_MS ?? 20_000),
    rounds: Math.min(Number(env.BENCH_DIST_ROUNDS ?? 1000), 500),
    throughputMs: Number(env.BENCH_DIST_MS ?? 10_000),
    concurrency,
  };
}

export async function benchLimits(options: LimitsOptions, progress: (s: string) => void): Promise<LimitsFigures> {
  const keepAlive = setInterval(() => {}, 1_000); // the spawned redis-server is unref'd
  const server = await spawnRedisServer();
  const limits = { tools: { [LIMITED.name]: { rate: options.rate } }, maxWaitMs: 3_600_000 };
  const namedLimits = parseNamedLimits(JSON.stringify(limits), 'bench');
  const starts: number[] = [];
  const sides: Record<'without' | 'with', Side> = {
    without: await startOurs(server.url, options.concurrency, progress, { prefix: 'bench-lim0' }),
    with: await startOurs(server.url, options.concurrency, progress, {
      prefix: 'bench-lim1',
      namedLimits,
      tools: [LIMITED],
      onCall: () => starts.push(performance.now()),
    }),
  };
  try {
    progress(`limits: ${LIMITED.name} at ${options.rate}, driven for ${options.rateMs} ms`);
    const rate = await driveAboveRate(sides.with, options, starts);
    progress('limits: an unlimited round with TD_LIMITS against without');
    const overhead = await compareOverhead(sides, options);
    return { rate, overhead };
  } finally {
    await sides.without.close();
    await sides.with.close();
    await server.stop();
    clearInterval(keepAlive);
  }
}

/** DRIVERS runs of rounds of ROUND limited calls for `rateMs`, then until every call is answered. */
async function driveAboveRate(side: Side, options: LimitsOptions, starts: number[]): Promise<LimitsFigures['rate']> {
  const engine = side.engine;
  if (!engine) throw new Error('the limits bench needs our engine');
  const [, count = '0', unit = 's'] = /^(\d+)\/([smh])$/.exec(options.rate) ?? [];
  const windowMs = { s: 1000, m: 60_000, h: 3_600_000 }[unit] ?? 1000;
  const until = performance.now() + options.rateMs;
  let n = 0;
  let notOk = 0;
  await Promise.all(
    Array.from({ length: DRIVERS }, async (_, d) => {
      while (performance.now() < until) {
        const response = await engine.submitRound({
          session: `bench-${d}`,
          run: 'limited',
          calls: Array.from({ length: ROUND }, (_, c) => ({
            id: `c${c}`,
            name: 'run_tool',
            args: { name: LIMITED.name, args: { n: n++ } },
          })),
        });
        notOk += response.results.filter((r) => r.status !== 'ok').length;
      }
    }),
  );
  const sorted = [...starts].sort((a, b) => a - b);
  const configuredPerSec = (Number(count) / windowMs) * 1000;
  // Saturated, each start waits for the one `count` before it to leave the window: the mean of those
  // spans is the window the limit really kept (its first `count` start at once, the window empty).
  const spans = sorted.slice(Number(count)).map((t, i) => t - (sorted[i] as number));
  const meanSpanMs = spans.reduce((a, b) => a + b, 0) / spans.length;
  const measuredPerSec = (Number(count) / meanSpanMs) * 1000;
  return {
    count: Number(count),
    configuredPerSec,
    measuredPerSec,
    ratio: measuredPerSec / configuredPerSec,
    starts: sorted.length,
    notOk,
    minSpanMs: Math.min(...spans),
  };
}

/** The acks bench's alternation: latency blocks, then throughput slices, each side in turn. */
async function compareOverhead(
  sides: Record<'without' | 'with', Side>,
  options: LimitsOptions,
): Promise<LimitsFigures['overhead']> {
  const lat = { without: [] as number[], with: [] as number[] };
  for (const k of ['without', 'with'] as const) await latencyBlock(sides[k], 20, []); // warm-up
  for (let done = 0; done < options.rounds; done += BLOCK)
    for (const k of done % (2 * BLOCK) === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const))
      await latencyBlock(sides[k], BLOCK, lat[k]);
  const calls = { without: 0, with: 0 };
  const ms = { without: 0, with: 0 };
  const sliceRatios: number[] = [];
  for (let s = 0; s < SLICES; s++) {
    const rate = { without: 0, with: 0 };
    for (const k of s % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
      const t = await throughputBlock(sides[k], options.throughputMs / SLICES);
      calls[k] += t.calls;
      ms[k] += t.elapsedMs;
      rate[k] = t.calls / t.elapsedMs;
    }
    sliceRatios.push(rate.with / rate.without);
  }
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const p50Ms = { without: p50(lat.without), with: p50(lat.with) };
  return {
    p50Ms,
    callsPerSec: { without: (calls.without / ms.without) * 1000, with: (calls.with / ms.with) * 1000 },
    ratios: { p50: p50Ms.with / p50Ms.without, throughput: p50(sliceRatios) },
  };
}

export function printLimits(f: LimitsFigures): void {
  const r = f.rate;
  console.log('\nTD_LIMITS: a tool at its rate, driven above it (10 runs of rounds of 5), in one run');
  console.log(
    `  configured ${r.configuredPerSec.toFixed(1)} starts/s   measured ${r.measuredPerSec.toFixed(2)} starts/s   ratio ${r.ratio.toFixed(3)}×`,
  );
  console.log(
    `  ${r.starts} starts, ${r.notOk} not ok; a start and the ${r.count}th after it at least ${r.minSpanMs.toFixed(0)} ms apart at the handler`,
  );
  const o = f.overhead;
  console.log('TD_LIMITS: an unlimited round of 5 no-op calls, TD_LIMITS set against unset (same process, same Redis)');
  console.log(
    `  without    round p50 ${o.p50Ms.without.toFixed(2)} ms   50 runs at once ${o.callsPerSec.without.toFixed(0)} calls/s`,
  );
  console.log(
    `  with       round p50 ${o.p50Ms.with.toFixed(2)} ms   50 runs at once ${o.callsPerSec.with.toFixed(0)} calls/s`,
  );
  console.log(`  with/without latency ${o.ratios.p50.toFixed(2)}×   throughput ${o.ratios.throughput.toFixed(2)}×`);
}
