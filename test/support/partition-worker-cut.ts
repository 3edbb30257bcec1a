import { describe, expect, it } from 'vitest';
import {
  PARTITION_CUT_MS as cutMs,
  expectUnharmed,
  PARTITION_TEST_MS,
  PARTITION_SESSIONS as sessions,
  usePartitionCluster,
} from './partition-cluster.js';
import { check, firstAnswerAfter, LONG, printFigures, recoveryMs, startLoad } from './partition-load.js';

/**
 * Issue #43's worker cuts, both ways (a) and outbound only (c): a worker cut off from Redis
 * mid-command for longer than its job lock and the run's serial lane lease (40 s in the long
 * form, 20 s in CI's), then healed. Its job stalls and its call ends worker_lost; the run's next
 * serial call may start elsewhere, so the cut-off worker must have stopped the command itself
 * first (self-fencing): no two commands of a run overlap in the marks, none runs twice, and its
 * late report changes no answer. One file per direction, so that vitest runs them side by side.
 */
export function describeWorkerCut(direction: 'both' | 'outbound', title: string, figuresName: string): void {
  const clusterOf = usePartitionCluster();
  describe(title, () => {
    it(
      `answers every round of ${sessions} sessions with no two serial calls of a run overlapping and no token twice`,
      async () => {
        const cluster = clusterOf();
        const load = await startLoad(cluster, sessions, direction === 'both' ? 'wcut' : 'acut');
        await load.roundsAfter(1);
        const w1 = cluster.workers[0];
        if (!w1) throw new Error('no worker');
        const cutAt = Date.now();
        await cluster.net.cut(w1.ns, direction);
        await new Promise((r) => setTimeout(r, cutMs));
        await cluster.net.heal(w1.ns);
        const healedAt = Date.now();
        await load.roundsAfter(LONG ? 2 : 1);
        await load.stop();
        const figures = await check(cluster, load);
        printFigures(`${figuresName} ${cutMs / 1000} s`, figures, {
          sessions,
          recoveryMs: recoveryMs(load, cutAt, (r) => r.command === 'error/worker_lost'),
          firstAfterHealMs: firstAnswerAfter(load, healedAt),
        });
        // The cut caught a call mid-command (else the test proved nothing).
        expect(figures.byOutcome['error/worker_lost'] ?? 0).toBeGreaterThan(0);
        expectUnharmed(figures);
      },
      PARTITION_TEST_MS,
    );
  });
}
