// `node --import tsx bench/profile-embedded.ts [rounds] [out.cpuprofile]`: a CPU profile of the
// embedded bench's measured rounds only (the inspector's profiler started after the warm-up, so
// module loading and the baseline stay out), summarized by package and by function. The engine is
// the built one (dist/, after `pnpm build`); its functions keep their names in the bundle.

import { rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { summarizeProfile } from './cpu-profile-summary.js';
import { startBenchEngine } from './embedded.js';

const rounds = Number(process.argv[2] ?? 5000);
const out = process.argv[3] ?? path.join(tmpdir(), 'td-embedded.cpuprofile');
const { engine, round, root } = await startBenchEngine();
for (let r = 0; r < 500; r++) await round(r);

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const t0 = performance.now();
for (let r = 0; r < rounds; r++) await round(r);
const us = ((performance.now() - t0) * 1000) / (rounds * 5);
const { profile } = await session.post('Profiler.stop');
session.disconnect();
writeFileSync(out, JSON.stringify(profile));
await engine.drain();
await engine.close();
rmSync(root, { recursive: true, force: true });

const s = summarizeProfile(profile as unknown as Parameters<typeof summarizeProfile>[0], 30);
console.log(`${rounds} rounds of 5: ${us.toFixed(1)} µs/call under the profiler; profile in ${out}`);
console.log('\nself time by file:');
for (const e of s.byPlace) console.log(`  ${e.percent.toFixed(1).padStart(5)}%  ${e.name}`);
console.log('\nself time by function:');
for (const e of s.byFunction) console.log(`  ${e.percent.toFixed(1).padStart(5)}%  ${e.name}`);
