import { describe, expect, it } from 'vitest';
import {
  PARTITION_CUT_MS as CUT_MS,
  expectUnharmed,
  PARTITION_TEST_MS,
  PARTITION_SESSIONS as SESSIONS,
  usePartitionCluster,
} from '../support/partition-cluster.js';
import { check, firstAnswerAfter, LONG, printFigures, recoveryMs, startLoad } from '../support/partition-load.js';

// Issue #43 (b): a coordinator cut off (from Redis and its clients) while it holds rounds, for
// longer than its lease (5 s) and its runs' places (15 s), then healed. Its clients send their
// rounds again on the other coordinator under the same keys, which takes them over; the healed
// one's late writes (a commit of a round it no longer owns) change nothing: one answer per key
// on both, no command run twice, none overlapping another of its run.
const clusterOf = usePartitionCluster();

describe('a coordinator partitioned while it holds rounds, then healed', () => {
  it(
    `answers every round of ${SESSIONS} sessions once per key on both coordinators, no two serial calls of a run overlapping`,
    async () => {
      const cluster = clusterOf();
      const load = await startLoad(cluster, SESSIONS, 'ccut');
      await load.roundsAfter(1);
      const c1 = cluster.coordinators[0];
      if (!c1) throw new Error('no coordinator');
      const cutAt = Date.now();
      await cluster.net.cut(c1.ns, 'both');
      await new Promise((r) => setTimeout(r, CUT_MS));
      await cluster.net.heal(c1.ns);
      const healedAt = Date.now();
      await load.roundsAfter(LONG ? 2 : 1);
      await load.stop();
      const figures = await check(cluster, load);
      // Rounds the cut caught: begun on the cut coordinator before it, answered after it.
      const caught = load.records.filter((r) => r.first === 0 && r.sentAt < cutAt && (r.answeredAt ?? 0) > cutAt);
      printFigures(`coordinator cut ${CUT_MS / 1000} s`, figures, {
        sessions: SESSIONS,
        caught: caught.length,
        recoveryMs: recoveryMs(load, cutAt, (r) => r.first === 0),
        firstAfterHealMs: firstAnswerAfter(load, healedAt),
      });
      expect(caught.length).toBeGreaterThan(0);
      expectUnharmed(figures);
    },
    PARTITION_TEST_MS,
  );
});
