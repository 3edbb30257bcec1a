import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveConfig } from '@tool-dispatch/shared';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryConfirmHub } from './confirm/memory.js';
import { Engine } from './engine.js';
import { MemoryEventBus } from './events/memory.js';
import { FakeExecutor, sleep } from './executors/fake.js';
import { MemoryInputHub } from './inputs/memory.js';
import { MemoryLimits } from './limits/memory.js';
import { MemoryStore } from './store/memory.js';

// Property tests of the passes over random rounds (DESIGN.md pass 2 and pass 1 step 3/7).
const SERIAL = new Set(['run_command', 'edit_file']);

const callArb = fc.oneof(
  fc.record({ tool: fc.constant('calculate'), args: fc.record({ expression: fc.constantFrom('1+1', '2+2', '3') }) }),
  fc.record({
    tool: fc.constant('http_request'),
    args: fc.record({ url: fc.constantFrom('http://x/a', 'http://x/b', 'http://x/c') }),
  }),
  fc.record({ tool: fc.constant('read_files'), args: fc.record({ paths: fc.constantFrom(['a.txt'], ['b.txt']) }) }),
  fc.record({ tool: fc.constant('run_command'), args: fc.record({ command: fc.constantFrom('true', 'ls') }) }),
  fc.record({
    tool: fc.constant('edit_file'),
    args: fc.record({ path: fc.constantFrom('a.txt', 'c.txt'), content: fc.constant('x') }),
  }),
  fc.record({ tool: fc.constant('no_such_tool'), args: fc.constant({}) }),
  fc.record({ tool: fc.constant('calculate'), args: fc.record({ expression: fc.integer() }) }),
);
const roundsArb = fc.array(fc.array(callArb, { minLength: 1, maxLength: 14 }), { minLength: 1, maxLength: 3 });

function executor(): FakeExecutor {
  const ex = new FakeExecutor();
  for (const name of ['calculate', 'http_request', 'read_files', 'run_command', 'edit_file']) {
    ex.on(name, async (args) => {
      await sleep(Math.floor(Math.random() * 4));
      if (name === 'calculate' && args.expression === '3') throw new Error('handler failure');
      return { name, args };
    });
  }
  return ex;
}

async function play(rounds: Array<Array<{ tool: string; args: Record<string, unknown> }>>) {
  const ex = executor();
  const root = mkdtempSync(path.join(tmpdir(), 'td-prop-'));
  const engine = new Engine({
    config: resolveConfig({ workspaceRoot: root }, {}),
    executor: ex,
    store: new MemoryStore(),
    events: new MemoryEventBus(),
    confirmations: new MemoryConfirmHub(),
    inputs: new MemoryInputHub(),
    limits: new MemoryLimits(),
  });
  await engine.putSession('s', { provider: 'openai', autoApprove: 'all' });
  await engine.submitRound({ session: 's', run: 'setup', calls: [{ id: 'f', name: 'find_tools', args: {} }] });
  const out = [];
  let n = 0;
  for (const r of rounds) {
    const calls = r.map((c) => ({ id: `c${n++}`, name: 'run_tool', args: { name: c.tool, args: c.args } }));
    out.push({ calls, response: await engine.submitRound({ session: 's', run: 'run', calls }) });
  }
  return { ex, out };
}

describe('properties of a round', () => {
  it('answers one result per call, in call order', async () => {
    await fc.assert(
      fc.asyncProperty(roundsArb, async (rounds) => {
        const { out } = await play(rounds);
        for (const { calls, response } of out) {
          expect(response.results.map((r) => r.id)).toEqual(calls.map((c) => c.id));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('never has more than MAX_CONCURRENT_TOOLS calls of a run in flight', async () => {
    await fc.assert(
      fc.asyncProperty(roundsArb, async (rounds) => {
        const { ex } = await play(rounds);
        expect(ex.maxInFlight).toBeLessThanOrEqual(5);
      }),
      { numRuns: 40 },
    );
  });

  it('never lets a serial call overlap another call of its run', async () => {
    await fc.assert(
      fc.asyncProperty(roundsArb, async (rounds) => {
        const { ex } = await play(rounds);
        for (const s of ex.spans.filter((x) => SERIAL.has(x.job.name))) {
          for (const o of ex.spans) {
            if (o !== s) expect(o.end < s.start || o.start > s.end).toBe(true);
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it('never lets a deduped or cached call reach a handler', async () => {
    await fc.assert(
      fc.asyncProperty(roundsArb, async (rounds) => {
        const { ex, out } = await play(rounds);
        const results = out.flatMap((o) => o.response.results);
        const ran = results.filter((r) => r.ranOn === 'fake');
        expect(ex.started).toHaveLength(ran.length);
        const ranIds = new Set(ex.started.map((j) => j.toolCallId));
        for (const r of results.filter((x) => x.status === 'deduped' || x.status === 'cached')) {
          expect(ranIds.has(r.id)).toBe(false);
        }
      }),
      { numRuns: 40 },
    );
  });
});
