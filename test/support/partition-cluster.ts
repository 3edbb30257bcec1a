import { afterAll, beforeAll, expect } from 'vitest';
import { partitionSupport } from './netns.js';
import { type Cluster, type Figures, LONG, startCluster } from './partition-load.js';

/** The partition tests' size: sessions of load and how long the cut lasts (long form under TD_LONG=1). */
export const PARTITION_SESSIONS = LONG ? 20 : 4;
export const PARTITION_CUT_MS = LONG ? 40_000 : 20_000;
/** A partition test's own time limit. */
export const PARTITION_TEST_MS = LONG ? 1_200_000 : 400_000;

/**
 * A file's partition cluster (netns.ts, partition-load.ts): started before its tests and closed
 * after them. Throws at once, naming what is missing, where the machine cannot cut a process's
 * network off (never a silent skip). Read `cluster()` inside a test.
 */
export function usePartitionCluster(): () => Cluster {
  const support = partitionSupport();
  if (!support.ok) throw new Error(`the partition tests need root, ip and iptables: ${support.why}`);
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 180_000);
  afterAll(async () => {
    await cluster?.close();
  });
  return () => {
    if (!cluster) throw new Error('the partition cluster has not started');
    return cluster;
  };
}

/** What every partition must leave unharmed: every round answered, once per key, in order, its calls in the history. */
export function expectUnharmed(figures: Figures): void {
  expect(figures.answered).toBe(figures.rounds);
  expect(figures.overlaps).toEqual([]);
  expect(figures.tokens.many).toEqual([]);
  expect(figures.okWithoutRun).toEqual([]);
  expect(figures.missingFromHistory).toEqual([]);
  expect(figures.answersDiffering).toEqual([]);
}
