/** The /metrics expositions must pass `promtool check metrics` (API.md "Operations"). */
// Relative imports until the packages' index.ts export the metrics classes (wiring step).

import { describe, expect, it } from 'vitest';
import { CoordinatorMetrics } from '../packages/coordinator/src/app/metrics.js';
import { WorkerMetrics } from '../packages/worker/src/metrics.js';
import { checkMetrics, expectCleanMetrics, requirePromtool } from './support/promtool.js';

describe('the metrics exposition', () => {
  it('has promtool to check it with', () => {
    expect(requirePromtool()).toMatch(/promtool$/);
  });

  it('is clean for a coordinator after a workload touching every metric, with process metrics', async () => {
    const m = new CoordinatorMetrics();
    for (const status of [
      'ok',
      'error',
      'deduped',
      'cached',
      'schema',
      'refused',
      'unknown',
      'invalid',
      'denied',
    ] as const) {
      m.recordCall({ name: 'read_files', status, durationMs: 42 });
    }
    m.recordCall({ name: 'tool "with" \\odd\nname', status: 'ok', durationMs: 1 });
    m.recordRefusal('too_many_calls');
    m.roundStarted();
    m.confirmationRequested();
    m.setQueueJobCounts('td:concurrent', { waiting: 1, active: 2, delayed: 0, completed: 5, failed: 1 });
    m.setWorkersAlive(2);
    await expectCleanMetrics(await m.metrics());
  });

  it('is clean for a worker after a workload', async () => {
    const m = new WorkerMetrics();
    m.executionStarted('concurrent', 'calculate')('ok');
    m.executionStarted('serial', 'run_command')('error');
    m.executionStarted('concurrent', 'fetch_page');
    await expectCleanMetrics(await m.metrics());
  });

  it('is reported unclean by the checker when a gauge is named like a counter (the checker works)', async () => {
    const bad = '# HELP bad_total a gauge\n# TYPE bad_total gauge\nbad_total 1\n';
    const result = await checkMetrics(bad);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('bad_total');
  });
});
