import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { standingOutcome } from '../../packages/coordinator/src/executors/queue/verdicts.js';
import { type ExecOutcome, failedOutcome } from '../../packages/shared/src/index.js';
import { callIdFor, type QueuedJob, RUNNING_MARK, redisKeys } from '../../packages/shared/src/redis.js';
import { Reporter } from '../../packages/worker/src/queue/reporter.js';
import { execJob } from '../support/exec-jobs.js';
import { outcomeAt } from '../support/outcomes.js';
import { randomPrefix } from '../support/redis.js';
import { useRedis } from '../support/use-redis.js';

// Issue #43, late writes: what the deployment answered stands against a worker healed from a
// partition. The coordinator's safety net records its verdict (the job failed as stalled) under
// the call's outcome key before answering with it; the healed worker's report of the same call,
// under its job's running mark, is then neither recorded nor sent. And the other way round: an
// outcome the worker recorded first is what the coordinator answers, not its own verdict.
const okOutcome = (output: unknown, durationMs: number, ranOn: string): ExecOutcome => ({
  status: 'ok',
  output,
  durationMs,
  ranOn,
});
let redis: Redis;
useRedis((_server, r) => {
  redis = r;
});

function setting() {
  const keys = redisKeys(randomPrefix('late'));
  const job = execJob('run_command', { command: 'true' }, { queue: 'serial', workspace: '/tmp' });
  const callId = callIdFor(job.round, job.callIndex);
  const queued: QueuedJob = { coordinator: 'c-1', replyTo: keys.results('c-1'), calls: [job] };
  const carrier = 'carrier-1';
  return { keys, job, callId, queued, carrier, outcome: outcomeAt(redis, keys, 'c-1', callId) };
}

describe('late writes after a partition', () => {
  it('refuses a healed worker’s report of a call the coordinator already answered by its verdict', async () => {
    const s = setting();
    await s.outcome.set(RUNNING_MARK + s.carrier);
    const verdict = failedOutcome('worker_died', 'run_command: its worker died; the outcome is unknown', 9_000);
    const answered = await standingOutcome({ redis, keys: s.keys }, { origin: 'c-1', callId: s.callId }, verdict);
    expect(answered).toEqual(verdict);
    const late = okOutcome({ exitCode: 0, stdout: 'late', stderr: '' }, 16_000, 'w1');
    const reporter = new Reporter({ redis, keys: s.keys });
    await reporter.forJob(s.queued, s.carrier)({ callId: s.callId, origin: 'c-1' }, late);
    expect(JSON.parse((await s.outcome.get()) as string)).toEqual(verdict);
    expect(await redis.xlen(s.queued.replyTo)).toBe(0);
  });

  it('answers with the outcome a worker recorded before the verdict, and records nothing over it', async () => {
    const s = setting();
    const reported = okOutcome({ exitCode: 0, stdout: 'ran', stderr: '' }, 3_000, 'w2');
    await s.outcome.set(RUNNING_MARK + s.carrier);
    await new Reporter({ redis, keys: s.keys }).forJob(s.queued, s.carrier)(
      { callId: s.callId, origin: 'c-1' },
      reported,
    );
    const verdict = failedOutcome('worker_died', 'no worker reported it past its deadline', 60_000);
    const answered = await standingOutcome({ redis, keys: s.keys }, { origin: 'c-1', callId: s.callId }, verdict);
    expect(answered).toEqual(reported);
    expect(JSON.parse((await s.outcome.get()) as string)).toEqual(reported);
  });

  it('records a verdict on a call no job marked (its job lost before it started)', async () => {
    const s = setting();
    const verdict = failedOutcome('worker_died', 'the job disappeared from the queue', 1_000);
    expect(await standingOutcome({ redis, keys: s.keys }, { origin: 'c-1', callId: s.callId }, verdict)).toEqual(
      verdict,
    );
    expect(JSON.parse((await s.outcome.get()) as string)).toEqual(verdict);
    expect(await s.outcome.ttl()).toBeGreaterThan(0);
  });
});
