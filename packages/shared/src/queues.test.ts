import { describe, expect, it } from 'vitest';
import type { ExecJob } from './execution.js';
import { encodeQueuedJob, parseQueuedJob, type QueuedJob } from './queues.js';

const call = (round: string, callIndex: number, over: Partial<ExecJob> = {}): ExecJob => ({
  session: 's1',
  tenant: 't1',
  run: 'r1',
  round,
  callId: `c${callIndex}`,
  callIndex,
  name: 'read_files',
  args: { paths: [`f${callIndex}.txt`] },
  workspace: '/ws/t1/s1',
  queue: 'concurrent',
  timeoutMs: 60_000,
  ...over,
});

const job = (calls: ExecJob[]): QueuedJob => ({ calls, replyTo: 'td:{c:c1}:results', coordinator: 'c1' });

/** Through JSON, as BullMQ stores it. */
const roundTrip = (j: QueuedJob) => parseQueuedJob(JSON.parse(JSON.stringify(encodeQueuedJob(j))));

describe('job data (encodeQueuedJob, parseQueuedJob)', () => {
  it('leaves out what a round’s calls share, and reads the calls back exactly', () => {
    const j = job([0, 1, 2, 3, 4].map((i) => call('rnd_a', i)));
    const data = encodeQueuedJob(j);
    expect(data.calls[1]).toEqual({ callId: 'c1', callIndex: 1, name: 'read_files', args: { paths: ['f1.txt'] } });
    expect(JSON.stringify(data).length).toBeLessThan(JSON.stringify(j).length * 0.65);
    expect(roundTrip(j)).toEqual(j);
  });

  it('keeps what differs between the rounds of one job, and never hands a call another’s origin or trace', () => {
    const j = job([
      call('rnd_a', 0, { origin: 'c-gone', trace: { traceparent: '00-a-b-01' } }),
      call('rnd_a', 1, { origin: 'c-gone' }),
      call('rnd_b', 0, { session: 's2', workspace: '/ws/t1/s2', timeoutMs: 5_000 }),
      call('rnd_b', 1, { session: 's2', workspace: '/ws/t1/s2', timeoutMs: 5_000 }),
    ]);
    const back = roundTrip(j);
    expect(back).toEqual(j);
    expect(back?.calls[1]?.trace).toBeUndefined();
    expect(back?.calls[2]?.origin).toBeUndefined();
  });

  it('reads job data written in full (by a coordinator of an earlier version)', () => {
    const j = job([call('rnd_a', 0), call('rnd_a', 1)]);
    expect(parseQueuedJob(JSON.parse(JSON.stringify(j)))).toEqual(j);
  });

  it('refuses data that is not a job: a first call missing a field, calls of two queues, no calls', () => {
    const { session: _s, ...noSession } = call('rnd_a', 0);
    expect(parseQueuedJob({ ...job([]), calls: [noSession] })).toBeUndefined();
    expect(
      parseQueuedJob(encodeQueuedJob(job([call('rnd_a', 0), call('rnd_a', 1, { queue: 'serial' })]))),
    ).toBeUndefined();
    expect(parseQueuedJob(job([]))).toBeUndefined();
    expect(parseQueuedJob({ calls: [call('rnd_a', 0)] })).toBeUndefined();
  });
});
