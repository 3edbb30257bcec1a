import { failedOutcome } from '@tool-dispatch/shared';
import { JOB_LOCK_MS, PLACE_LEASE_MS } from '@tool-dispatch/shared/redis';
import type { Job, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { FencedAbort, isFenced } from '../support/fenced.js';
import { fencedOutcome, fenceTimingOf, JobFence } from './fencing.js';

// The fence's clock is the test's: renewals are the worker's extendJobLocks, answered by the test.
let clock = 0;
const fences: JobFence[] = [];
afterEach(() => {
  for (const f of fences.splice(0)) f.close();
});

/** Jobs Redis still has (asked after a refused renewal); `lookupFails` makes the ask fail (Redis out of reach). */
let redisHas = new Set<string>();
let lookupFails = false;
const known = async (id: string) => {
  if (lookupFails) throw new Error('Connection is closed.');
  return redisHas.has(id);
};

function fenced(lockMs: number) {
  redisHas = new Set();
  lookupFails = false;
  const fence = new JobFence({ ...fenceTimingOf(lockMs), checkEveryMs: 5 }, known, () => clock);
  fences.push(fence);
  let refuse: string[] = [];
  const worker = { extendJobLocks: async () => refuse } as unknown as Worker;
  fence.watch(worker);
  return {
    fence,
    renew: (ids: string[]) => worker.extendJobLocks(ids, ids, lockMs),
    refuseNext: (ids: string[]) => {
      refuse = ids;
    },
  };
}
const job = (id: string) => ({ id, processedOn: Date.now() }) as Job;
const tick = () => new Promise((r) => setTimeout(r, 30));

describe('JobFence', () => {
  it('keeps a cut-off worker’s running time (fence + one check) inside the lock with 2 s to spare, and far inside the places’ lease', () => {
    const t = fenceTimingOf(JOB_LOCK_MS);
    const runsOnMs = t.fenceAfterMs + t.checkEveryMs;
    // Redis's clock and the worker's may differ in rate by 1e-3 (docs/operations.md, Partitions).
    expect(JOB_LOCK_MS * (1 - 1e-3) - runsOnMs).toBeGreaterThan(2_000);
    expect(PLACE_LEASE_MS).toBeGreaterThan(JOB_LOCK_MS);
    expect(PLACE_LEASE_MS - runsOnMs).toBeGreaterThan(10_000);
  });

  it('keeps fencing strictly inside the lock: renewals at a fifth of it, the fence at half', () => {
    expect(fenceTimingOf(5_000)).toMatchObject({ renewEveryMs: 1_000, fenceAfterMs: 2_500 });
    const t = fenceTimingOf(2_000);
    expect(t.fenceAfterMs).toBeLessThan(2_000);
    expect(t.fenceAfterMs).toBeGreaterThan(2 * t.renewEveryMs);
  });

  it('leaves a job alone while its lock is renewed, and stops it once renewals stop past the deadline', async () => {
    const { fence, renew } = fenced(5_000);
    clock = 1_000;
    const signal = fence.track(job('a'));
    for (let i = 0; i < 5; i++) {
      clock += 1_000;
      await renew(['a']);
      await tick();
    }
    expect(signal.aborted).toBe(false);
    clock += 2_400;
    await tick();
    expect(signal.aborted).toBe(false);
    clock += 200;
    await tick();
    expect(signal.aborted).toBe(true);
    expect(isFenced(signal.reason)).toBe(true);
    expect((signal.reason as FencedAbort).unrenewedMs).toBe(2_600);
  });

  it('counts a renewal from when it was sent, not when it was answered', async () => {
    const { fence } = fenced(5_000);
    clock = 0;
    let answer: (v: string[]) => void = () => {};
    const slow = { extendJobLocks: () => new Promise<string[]>((r) => (answer = r)) } as unknown as Worker;
    fence.watch(slow);
    const signal = fence.track(job('b'));
    clock = 1_000;
    const sent = slow.extendJobLocks(['b'], ['t'], 5_000);
    clock = 3_400;
    answer([]);
    await sent;
    await tick();
    expect(signal.aborted).toBe(false);
    clock = 3_600; // 2.6 s after the send that succeeded
    await tick();
    expect(signal.aborted).toBe(true);
  });

  it('stops a job at once when Redis refuses to renew its lock and still has the job (failed, moved or taken)', async () => {
    const { fence, renew, refuseNext } = fenced(5_000);
    clock = 0;
    const kept = fence.track(job('c'));
    const lost = fence.track(job('d'));
    redisHas = new Set(['c', 'd']);
    refuseNext(['d']);
    await renew(['c', 'd']);
    expect(lost.aborted).toBe(true);
    expect(String(lost.reason.message)).toMatch(/refused to renew its lock and still has the job/);
    expect(kept.aborted).toBe(false);
  });

  it('counts a refusal for a job Redis no longer has (an empty restart) as a renewal: the call goes on', async () => {
    const { fence, renew, refuseNext } = fenced(5_000);
    clock = 0;
    const signal = fence.track(job('e'));
    refuseNext(['e']);
    for (let i = 0; i < 6; i++) {
      clock += 1_000;
      await renew(['e']);
      await tick();
    }
    expect(signal.aborted).toBe(false);
    // Redis out of reach when asked: neither a renewal nor a fence; the deadline decides.
    lookupFails = true;
    clock += 1_000;
    await renew(['e']);
    clock += 1_600; // 2.6 s after the last refusal that counted
    await tick();
    expect(signal.aborted).toBe(true);
    expect((signal.reason as FencedAbort).unrenewedMs).toBe(2_600);
  });

  it('says worker_lost, outcome unknown, for a call its fence stopped, and leaves any other outcome', () => {
    const stop = new AbortController();
    const cancelled = failedOutcome('run_cancelled', 'the call was cancelled', 12, { ranOn: 'w1' });
    const serial = { name: 'run_command', queue: 'serial' as const };
    expect(fencedOutcome(stop.signal, cancelled, serial)).toBe(cancelled);
    stop.abort(new FencedAbort('the worker lost its hold on job j', 2_600));
    const outcome = fencedOutcome(stop.signal, cancelled, serial);
    expect(outcome).toMatchObject({ status: 'error', code: 'worker_lost', ranOn: 'w1', durationMs: 12 });
    expect(outcome.status === 'error' && outcome.message).toMatch(/outcome is unknown and it was not re-run/);
  });
});
