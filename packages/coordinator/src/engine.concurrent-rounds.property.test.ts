import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ExecJob, resolveConfig } from '@tool-dispatch/shared';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryConfirmHub } from './confirm/memory.js';
import { Engine } from './engine.js';
import { MemoryEventBus } from './events/memory.js';
import { FakeExecutor, sleep } from './executors/fake.js';
import { MemoryInputHub } from './inputs/memory.js';
import { MemoryLimits } from './limits/memory.js';
import { MemoryStore } from './store/memory.js';

// API.md v1.1 (TD_WORKER_SERIAL_CONCURRENCY): a run never has two serial calls in flight, whatever
// the workers run at once; DESIGN.md pass 2: order is kept within a round. Here rounds of a run
// are submitted together (engine.property.test.ts plays them one after another).
const SERIAL = new Set(['run_command', 'edit_file']);
const RUNS = ['run-a', 'run-b'] as const;

const callArb = fc.oneof(
  fc.record({ tool: fc.constant('run_command'), args: fc.record({ command: fc.constantFrom('true', 'ls', 'pwd') }) }),
  fc.record({
    tool: fc.constant('edit_file'),
    args: fc.record({ path: fc.constantFrom('a.txt', 'b.txt'), content: fc.constantFrom('x', 'y') }),
  }),
  fc.record({ tool: fc.constant('calculate'), args: fc.record({ expression: fc.integer().map(String) }) }),
  fc.record({ tool: fc.constant('read_files'), args: fc.record({ paths: fc.constantFrom(['a.txt'], ['b.txt']) }) }),
  fc.record({ tool: fc.constant('no_such_tool'), args: fc.constant({}) }),
);
const roundArb = fc.record({
  run: fc.constantFrom(...RUNS),
  calls: fc.array(callArb, { minLength: 1, maxLength: 8 }),
});
/** Rounds submitted at once; most of them of one run, so they contend for its serial lane. */
const togetherArb = fc.array(roundArb, { minLength: 2, maxLength: 6 });

type Span = FakeExecutor['spans'][number];

interface RoundPlan {
  run: (typeof RUNS)[number];
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
}

async function playTogether(rounds: readonly RoundPlan[]) {
  const ex = new FakeExecutor();
  for (const name of ['calculate', 'read_files', 'run_command', 'edit_file']) {
    ex.on(name, async () => {
      await sleep(Math.floor(Math.random() * 4));
      return { name };
    });
  }
  const engine = new Engine({
    config: resolveConfig({ workspaceRoot: mkdtempSync(path.join(tmpdir(), 'td-prop-')) }, {}),
    executor: ex,
    store: new MemoryStore(),
    events: new MemoryEventBus(),
    confirmations: new MemoryConfirmHub(),
    inputs: new MemoryInputHub(),
    limits: new MemoryLimits(),
  });
  await engine.putSession('s', { provider: 'openai', autoApprove: 'all' });
  await engine.submitRound({ session: 's', run: 'setup', calls: [{ id: 'f', name: 'find_tools', args: {} }] });
  let n = 0;
  const submitted = rounds.map((r) => ({
    run: r.run,
    calls: r.calls.map((c) => ({ id: `c${n++}`, name: 'run_tool', args: { name: c.tool, args: c.args } })),
  }));
  const responses = await Promise.all(
    submitted.map((r) => engine.submitRound({ session: 's', run: r.run, calls: r.calls })),
  );
  return { ex, submitted, responses };
}

const overlap = (a: Span, b: Span) => a.start < b.end && b.start < a.end;
const isSerial = (j: ExecJob) => SERIAL.has(j.name);

describe('properties of rounds of one run submitted together', () => {
  it('never has two serial calls of one run in flight at once', async () => {
    await fc.assert(
      fc.asyncProperty(togetherArb, async (rounds) => {
        const { ex } = await playTogether(rounds);
        const serial = ex.spans.filter((s) => isSerial(s.job));
        for (const a of serial) {
          for (const b of serial) {
            if (a !== b && a.job.run === b.job.run)
              expect(overlap(a, b), `${a.job.toolCallId} / ${b.job.toolCallId}`).toBe(false);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('keeps each round’s order: a serial call starts after its earlier calls end, and later ones start after it ends', async () => {
    await fc.assert(
      fc.asyncProperty(togetherArb, async (rounds) => {
        const { ex } = await playTogether(rounds);
        for (const s of ex.spans.filter((x) => isSerial(x.job))) {
          for (const o of ex.spans.filter((x) => x !== s && x.job.round === s.job.round)) {
            if (o.job.callIndex < s.job.callIndex) expect(o.end).toBeLessThan(s.start);
            else expect(o.start).toBeGreaterThan(s.end);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('answers each round with one result per call, in call order, and never more than 5 calls of a run in flight', async () => {
    await fc.assert(
      fc.asyncProperty(togetherArb, async (rounds) => {
        const { ex, submitted, responses } = await playTogether(rounds);
        submitted.forEach((r, i) => {
          expect(responses[i]?.results.map((x) => x.id)).toEqual(r.calls.map((c) => c.id));
        });
        for (const run of RUNS) {
          const edges = ex.spans
            .filter((s) => s.job.run === run)
            .flatMap((s) => [
              { t: s.start, d: 1 },
              { t: s.end, d: -1 },
            ])
            .sort((a, b) => a.t - b.t);
          let now = 0;
          for (const e of edges) {
            now += e.d;
            expect(now).toBeLessThanOrEqual(5);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
