import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import type { ExecJob } from './execution.js';
import {
  encodeQueuedJob,
  parseQueuedJob,
  QUEUE_NAMES,
  type QueuedJob,
  shardOf,
  shardQueueName,
  shardQueueNames,
} from './queues.js';

const call = (round: string, callIndex: number, over: Partial<ExecJob> = {}): ExecJob => ({
  session: 's1',
  tenant: 't1',
  run: 'r1',
  round,
  toolCallId: `c${callIndex}`,
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
    expect(data.calls[1]).toEqual({ toolCallId: 'c1', callIndex: 1, name: 'read_files', args: { paths: ['f1.txt'] } });
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

  it('reads calls that name the model’s id callId (a coordinator of before 1.3) as toolCallId', () => {
    const j = job([call('rnd_a', 0), call('rnd_a', 1)]);
    const old = encodeQueuedJob(j);
    old.calls = old.calls.map(({ toolCallId, ...rest }) => ({ ...rest, callId: toolCallId }) as Partial<ExecJob>);
    expect(parseQueuedJob(JSON.parse(JSON.stringify(old)))).toEqual(j);
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

describe('queue shards (TD_QUEUE_SHARDS)', () => {
  it('keeps the queue names of before shards for one shard', () => {
    expect(shardQueueNames('concurrent', 1)).toEqual([QUEUE_NAMES.concurrent]);
    expect(shardQueueNames('serial', 1)).toEqual([QUEUE_NAMES.serial]);
  });

  it.each([2, 3, 4, 7, 16, 64])('puts shard i of %i in the i-th part of the slot range, one hash tag each', (n) => {
    const names = [...shardQueueNames('concurrent', n), ...shardQueueNames('serial', n)];
    expect(new Set(names).size).toBe(2 * n);
    for (const cls of ['concurrent', 'serial'] as const) {
      shardQueueNames(cls, n).forEach((name, i) => {
        // BullMQ forbids ':' in queue names; the braces make the whole queue one cluster slot.
        expect(name).toMatch(new RegExp(`^\\{td-${cls}-${i}-\\d+\\}$`));
        const slot = calculateSlot(name);
        expect(slot).toBeGreaterThanOrEqual(Math.floor((i * 16384) / n));
        expect(slot).toBeLessThan(Math.floor(((i + 1) * 16384) / n));
      });
    }
  });

  it('names the same shard the same way every time, and refuses a shard out of range', () => {
    expect(shardQueueName('serial', 2, 3)).toBe(shardQueueName('serial', 2, 3));
    expect(() => shardQueueName('serial', 3, 3)).toThrow('shard 3 is not one of 0..2');
    expect(() => shardQueueName('serial', -1, 3)).toThrow(RangeError);
  });

  it('sends all of a run to one shard, the same in every process, and spreads runs evenly', () => {
    expect(shardOf('s', 'r', 1)).toBe(0);
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) {
      const shard = shardOf(`session-${i % 37}`, `run-${i}`, 3);
      expect(shard).toBe(shardOf(`session-${i % 37}`, `run-${i}`, 3));
      counts[shard] = (counts[shard] ?? 0) + 1;
    }
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
    // Session and run are kept apart: ("ab", "c") and ("a", "bc") are different runs.
    const apart = Array.from({ length: 50 }, (_, i) => shardOf(`a${i}b`, 'c', 64) === shardOf(`a${i}`, 'bc', 64));
    expect(apart.filter(Boolean).length).toBeLessThan(10);
  });
});
