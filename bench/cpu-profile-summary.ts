// `node --import tsx bench/cpu-profile-summary.ts <file.cpuprofile> [top]`: where a `node --cpu-prof`
// profile's time went, as self time by file (grouped by package) and by function, in % of the
// profile's samples. For the README's profile notes (see "Embedded: where the time goes").

import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A file's place: its workspace package and path, a dependency's name, or `node:` internals. */
export function placeOf(url: string): string {
  if (url === '') return '(native / GC / idle)';
  if (url.startsWith('node:')) return url;
  const dep = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return `dep ${dep[1]}`;
  const own = /\/packages\/([^/]+)\/(?:src|dist)\/(.*)$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  return url.replace(/^file:\/\//, '');
}

export function summarizeProfile(profile: CpuProfile, top = 25) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const place = placeOf(url);
    add(byPlace, place, us);
    add(byFunction, `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`, us);
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, percent: (us / total) * 100 }));
  return { totalMs: total / 1000, byPlace: rank(byPlace), byFunction: rank(byFunction) };
}

if (process.argv[1]?.endsWith('cpu-profile-summary.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: cpu-profile-summary.ts <file.cpuprofile> [top]');
  const s = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, Number(process.argv[3] ?? 25));
  console.log(`${s.totalMs.toFixed(0)} ms sampled\n\nself time by file:`);
  for (const e of s.byPlace) console.log(`  ${e.percent.toFixed(1).padStart(5)}%  ${e.name}`);
  console.log('\nself time by function:');
  for (const e of s.byFunction) console.log(`  ${e.percent.toFixed(1).padStart(5)}%  ${e.name}`);
}
