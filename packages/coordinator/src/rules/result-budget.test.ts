import type { Artifact, CallResult } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { roundCuts } from './result-budget.js';

const read = (i: number, chars: number): CallResult => ({
  id: `c${i}`,
  name: 'read_files',
  status: 'ok',
  output: { files: [{ path: `f${i}`, content: 'x'.repeat(chars) }] },
  durationMs: 1,
});
const art = (i: number): Artifact => ({ path: `.tool-results/r-${i}-read_files.txt`, bytes: 1 });

describe('roundCuts (API.md v1.2: the round budget cuts the largest outputs first)', () => {
  it('cuts nothing while the round fits', () => {
    const results = new Map([
      [0, read(0, 1000)],
      [1, read(1, 1000)],
    ]);
    expect(
      roundCuts(
        results,
        new Map([
          [0, art(0)],
          [1, art(1)],
        ]),
        { round: 5000 },
      ).size,
    ).toBe(0);
  });

  it('cuts the largest first, only as many as needed, the rest whole', () => {
    const results = new Map([
      [0, read(0, 3000)],
      [1, read(1, 9000)],
      [2, read(2, 4000)],
      [3, read(3, 500)],
    ]);
    const arts = new Map([0, 1, 2, 3].map((i) => [i, art(i)] as const));
    const cuts = roundCuts(results, arts, { round: 10_000 });
    expect([...cuts.keys()]).toEqual([1, 2]);
    const kept = [0, 3].map((i) => JSON.stringify(results.get(i)?.output).length);
    const cut = [...cuts.values()].map((r) => JSON.stringify(r.output).length);
    expect([...kept, ...cut].reduce((a, b) => a + b)).toBeLessThanOrEqual(10_000);
    for (const r of cuts.values()) expect(r.output).toMatchObject({ truncated: true, artifact: expect.any(Object) });
  });

  it('never cuts an output that has no artifact, nor one that is not ok', () => {
    const failed: CallResult = { ...read(1, 9000), status: 'error', error: { code: 'handler_error', message: 'x' } };
    const results = new Map([
      [0, read(0, 9000)],
      [1, failed],
    ]);
    expect(roundCuts(results, new Map([[1, art(1)]]), { round: 2000 }).size).toBe(0);
  });
});
