// Per-call overhead of the three passes in embedded mode, against a hand-written minimum
// (ajv validation + p-limit(5) + Promise.all) over the same no-op tool, in this process.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createEngine } from '@tool-dispatch/coordinator';
import { resolveConfig, validateAgainst } from '@tool-dispatch/shared';
import pLimit from 'p-limit';

const CALLS_PER_ROUND = 5;
const PARAMS = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
const noop = async (args: Record<string, unknown>) => ({ n: args.n });

export interface EmbeddedFigures {
  rounds: number;
  engineUsPerCall: number;
  baselineUsPerCall: number;
  ratio: number;
  engineHeapKbPerRound: number;
}

async function baseline(rounds: number): Promise<number> {
  const limit = pLimit(5);
  let n = 0;
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    const calls = Array.from({ length: CALLS_PER_ROUND }, () => ({ n: n++ }));
    await Promise.all(
      calls.map((args) =>
        limit(async () => {
          const v = validateAgainst(PARAMS, args);
          if (!v.valid) throw new Error('invalid');
          return noop(args);
        }),
      ),
    );
  }
  return ((performance.now() - t0) * 1000) / (rounds * CALLS_PER_ROUND);
}

/**
 * An embedded engine with the no-op tool `bench_noop` (its schema fetched) in a temp workspace
 * root, and `round(r)`: one round of CALLS_PER_ROUND calls of it through run_tool, in one of 50 runs.
 */
export async function startBenchEngine() {
  const root = mkdtempSync(path.join(tmpdir(), 'td-bench-'));
  const engine = await createEngine({
    config: resolveConfig({ workspaceRoot: root, mode: 'embedded' }, {}),
    tools: [{ name: 'bench_noop', description: 'no-op', parameters: PARAMS, concurrency: 'concurrent' }],
    handlers: [{ name: 'bench_noop', handler: noop }],
  });
  await engine.putSession('bench', { provider: 'openai' });
  await engine.submitRound({
    session: 'bench',
    run: 'setup',
    calls: [{ id: 'f', name: 'find_tools', args: { names: ['bench_noop'] } }],
  });
  let n = 0;
  const round = (r: number) =>
    engine.submitRound({
      session: 'bench',
      run: `run-${r % 50}`,
      calls: Array.from({ length: CALLS_PER_ROUND }, (_, i) => ({
        id: `c${i}`,
        name: 'run_tool',
        args: { name: 'bench_noop', args: { n: n++ } },
      })),
    });
  return { engine, round, root };
}

export async function benchEmbedded(rounds: number, progress: (s: string) => void): Promise<EmbeddedFigures> {
  const { engine, round, root } = await startBenchEngine();
  for (let r = 0; r < Math.min(200, rounds); r++) await round(r); // warm-up
  await baseline(Math.min(200, rounds));
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    await round(r);
    if (r % Math.ceil(rounds / 4) === 0) progress(`embedded: round ${r}/${rounds}`);
  }
  const engineUs = ((performance.now() - t0) * 1000) / (rounds * CALLS_PER_ROUND);
  global.gc?.();
  const heapKb = (process.memoryUsage().heapUsed - heap0) / 1024 / rounds;
  const baseUs = await baseline(rounds);
  await engine.drain();
  await engine.close();
  rmSync(root, { recursive: true, force: true });
  return {
    rounds,
    engineUsPerCall: engineUs,
    baselineUsPerCall: baseUs,
    ratio: engineUs / baseUs,
    engineHeapKbPerRound: heapKb,
  };
}
