import { describe, expect, it } from 'vitest';
import { type PlanStep, planSteps } from './plan.js';

/** A call as the plan sees it: a label, concurrent when it starts with `c`, serial when with `s`. */
const plan = (labels: string) => planSteps(labels.split(' ').filter(Boolean), (l) => l.startsWith('c'));

/** The steps written back as text: a batch in brackets, a serial call bare. */
const show = (steps: PlanStep<string>[]) =>
  steps.map((s) => (s.kind === 'batch' ? `[${s.calls.join(' ')}]` : s.call)).join(' ');

describe('planSteps', () => {
  it('puts consecutive concurrent calls in one batch', () => {
    expect(plan('c1 c2 c3')).toEqual([{ kind: 'batch', calls: ['c1', 'c2', 'c3'] }]);
  });

  it('runs a serial call alone', () => {
    expect(plan('s1')).toEqual([{ kind: 'serial', call: 's1' }]);
  });

  it('never batches serial calls together, even when they are consecutive', () => {
    expect(show(plan('s1 s2 s3'))).toBe('s1 s2 s3');
  });

  it('splits a run of concurrent calls at each serial call, keeping call order', () => {
    expect(show(plan('c1 c2 s1 c3 s2 s3 c4 c5'))).toBe('[c1 c2] s1 [c3] s2 s3 [c4 c5]');
  });

  it('starts and ends with a serial call when the round does', () => {
    expect(show(plan('s1 c1 c2 s2'))).toBe('s1 [c1 c2] s2');
  });

  it('keeps every call exactly once', () => {
    const calls = 'c1 s1 c2 c3 s2 c4'.split(' ');
    const flat = planSteps(calls, (l) => l.startsWith('c')).flatMap((s) => (s.kind === 'batch' ? s.calls : [s.call]));
    expect(flat).toEqual(calls);
  });

  it('does not cap a batch: limiting calls in flight is left to pass 2', () => {
    const many = Array.from({ length: 12 }, (_, i) => `c${i}`).join(' ');
    expect(plan(many)).toHaveLength(1);
  });

  it('gives no steps for an empty round', () => {
    expect(planSteps([], () => true)).toEqual([]);
  });
});
