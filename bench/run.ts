// `pnpm bench`: benchmarks reported as ratios against a baseline run in the same process.
import { benchEmbedded } from './embedded.js';

const progress = (s: string) => process.stderr.write(`  … ${s}\n`);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2000);

const e = await benchEmbedded(rounds, progress);
console.log('\nEmbedded mode: per-call cost of the three passes (rounds of 5 calls of a no-op tool)');
console.log(`  engine     ${e.engineUsPerCall.toFixed(1)} µs/call`);
console.log(`  baseline   ${e.baselineUsPerCall.toFixed(1)} µs/call  (ajv + p-limit(5) + Promise.all, no state)`);
console.log(`  ratio      ${e.ratio.toFixed(1)}× the baseline`);
console.log(`  heap       ${e.engineHeapKbPerRound.toFixed(2)} KiB retained per round (history, dedupe map)`);
