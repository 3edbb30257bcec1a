// `node --import tsx bench/second-worker.ts` (after a build): what a second worker on the same
// queue costs one run's rounds. BullMQ 6's moveToActive adds a "job available" marker each time
// a worker takes a job, so an idle second worker wakes, finds nothing, and blocks again: one
// wasted wake-up and fetch per job. The peer's 5 jobs a round give its second worker work; ours
// are one job. Two engines in this process on one Redis, each with two workers: A's both on its
// queue, B's second on a queue nobody uses; rounds alternate between them in blocks.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDistributedEngine } from '@tool-dispatch/coordinator';
import { resolveConfig, type ToolDefinition } from '@tool-dispatch/shared';
import { createBuiltinRegistry, type RunningWorker, startWorker } from '@tool-dispatch/worker';
import { spawnRedisServer } from '../test/support/redis.js';

const BLOCKS = 40;
const ROUNDS_PER_BLOCK = 50;
const TOOL: ToolDefinition = {
  name: 'bench_noop',
  description: 'no-op',
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
  concurrency: 'concurrent',
};

interface Setup {
  round(): Promise<void>;
  close(): Promise<void>;
}

async function setup(redisUrl: string, prefix: string, workerPrefixes: readonly string[]): Promise<Setup> {
  const root = mkdtempSync(path.join(tmpdir(), 'td-bench-2w-'));
  const config = resolveConfig(
    { mode: 'distributed', redisUrl, prefix, workspaceRoot: root, workerConcurrency: 16 },
    {},
  );
  const built = await createDistributedEngine(config, { tools: [TOOL], log: () => {} });
  const workers: RunningWorker[] = [];
  for (const workerPrefix of workerPrefixes) {
    const registry = createBuiltinRegistry();
    registry.register(TOOL.name, async (args: Record<string, unknown>) => ({ n: args.n }));
    workers.push(
      await startWorker({
        redisUrl,
        prefix: workerPrefix,
        registry,
        config: { httpAllow: [], searchUrl: undefined },
        concurrency: 16,
      }),
    );
  }
  const { engine } = built;
  await engine.putSession('s', { provider: 'openai' });
  await engine.submitRound({
    session: 's',
    run: 'setup',
    calls: [{ id: 'f', name: 'find_tools', args: { names: [TOOL.name] } }],
  });
  let n = 0;
  return {
    async round() {
      const response = await engine.submitRound({
        session: 's',
        run: 'bench',
        calls: Array.from({ length: 5 }, (_, c) => ({
          id: `c${c}`,
          name: 'run_tool',
          args: { name: TOOL.name, args: { n: n++ } },
        })),
      });
      if (response.results.some((r) => r.status !== 'ok')) throw new Error('a call did not end ok');
    },
    async close() {
      await engine.close();
      await built.release();
      await Promise.all(workers.map((w) => w.close()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const p50 = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const server = await spawnRedisServer();
const keepAlive = setInterval(() => {}, 1_000);
const both = await setup(server.url, 'two', ['two', 'two']);
const one = await setup(server.url, 'one', ['one', 'idle-elsewhere']);
const sides = [
  { name: 'both workers on the queue', setup: both, ms: [] as number[] },
  { name: 'second worker elsewhere', setup: one, ms: [] as number[] },
];
for (let i = 0; i < 300; i++) for (const s of sides) await s.setup.round();
for (let block = 0; block < BLOCKS; block++) {
  for (const s of block % 2 === 0 ? sides : [...sides].reverse()) {
    for (let r = 0; r < ROUNDS_PER_BLOCK; r++) {
      const t0 = performance.now();
      await s.setup.round();
      s.ms.push(performance.now() - t0);
    }
  }
  process.stderr.write(`  … block ${block + 1}/${BLOCKS}\n`);
}
for (const s of sides) console.log(`${s.name.padEnd(28)} round p50 ${p50(s.ms).toFixed(2)} ms`);
console.log(`ratio (elsewhere / both)      ${(p50(sides[1]?.ms ?? []) / p50(sides[0]?.ms ?? [])).toFixed(2)}×`);
for (const s of sides) await s.setup.close();
await server.stop();
clearInterval(keepAlive);
