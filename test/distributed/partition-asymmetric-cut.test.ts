import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionSupport } from '../support/netns.js';
import {
  type Cluster,
  check,
  firstAnswerAfter,
  LONG,
  printFigures,
  recoveryMs,
  startCluster,
  startLoad,
} from '../support/partition-load.js';

// Issue #43 (c): an asymmetric cut: a worker's outbound packets dropped (it hears Redis, Redis never
// hears it) mid-command, 40 s in the long form, 20 s here, then healed. Its lock lapses, its job
// stalls and its call ends worker_lost while the command would still run: the worker, which
// cannot renew its lock, stopped it first (self-fencing): no two commands of a run
// overlap in the marks, none runs twice, and its late report changes no answer.
const support = partitionSupport();
if (!support.ok) throw new Error(`the partition tests need root, ip and iptables: ${support.why}`);
const SESSIONS = LONG ? 20 : 4;
const CUT_MS = LONG ? 40_000 : 20_000;

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 180_000);
afterAll(async () => {
  await cluster?.close();
});

describe('a worker whose outbound packets are dropped mid-command (an asymmetric cut), then healed', () => {
  it(
    `answers every round of ${SESSIONS} sessions with no two serial calls of a run overlapping and no token twice`,
    async () => {
      const load = await startLoad(cluster, SESSIONS, 'acut');
      await load.roundsAfter(1);
      const w1 = cluster.workers[0];
      if (!w1) throw new Error('no worker');
      const cutAt = Date.now();
      await cluster.net.cut(w1.ns, 'outbound');
      await new Promise((r) => setTimeout(r, CUT_MS));
      await cluster.net.heal(w1.ns);
      const healedAt = Date.now();
      await load.roundsAfter(LONG ? 2 : 1);
      await load.stop();
      const figures = await check(cluster, load);
      printFigures(`worker outbound-only cut ${CUT_MS / 1000} s`, figures, {
        sessions: SESSIONS,
        recoveryMs: recoveryMs(load, cutAt, (r) => r.command === 'error/worker_lost'),
        firstAfterHealMs: firstAnswerAfter(load, healedAt),
      });
      expect(figures.answered).toBe(figures.rounds);
      // The cut caught a call mid-command (else the test proved nothing).
      expect(figures.byOutcome['error/worker_lost'] ?? 0).toBeGreaterThan(0);
      expect(figures.overlaps).toEqual([]);
      expect(figures.tokens.many).toEqual([]);
      expect(figures.okWithoutRun).toEqual([]);
      expect(figures.missingFromHistory).toEqual([]);
      expect(figures.answersDiffering).toEqual([]);
    },
    LONG ? 1_200_000 : 400_000,
  );
});
