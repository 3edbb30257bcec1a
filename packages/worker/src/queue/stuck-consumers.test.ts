import type { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { StuckConsumerWatch, type WatchedConsumer } from './stuck-consumers.js';

/** A stand-in for a BullMQ worker: only what the watch calls (close). */
function fakeWorker(label: string): Worker & { closed: boolean; label: string } {
  const w = {
    label,
    closed: false,
    close: async () => {
      w.closed = true;
    },
  };
  return w as unknown as Worker & { closed: boolean; label: string };
}

function setup(head: () => string | null) {
  let made = 0;
  const consumer: WatchedConsumer = {
    queueName: '{td-concurrent}',
    concurrency: 2,
    worker: fakeWorker('first'),
    make: () => fakeWorker(`replacement ${++made}`),
    active: 0,
    takenAt: 0,
  };
  const lines: string[] = [];
  const asked: string[] = [];
  const watch = new StuckConsumerWatch({
    redis: {
      lindex: async (key, index) => {
        asked.push(`${key} ${index}`);
        return head();
      },
    },
    prefix: 'td',
    consumers: [consumer],
    log: (l) => lines.push(l),
    onError: (e) => {
      throw e;
    },
    checkMs: 60_000,
  });
  return { consumer, watch, lines, asked };
}

describe('StuckConsumerWatch', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  it('replaces a consumer that had room while the same job stayed first in line, and says why', async () => {
    const { consumer, watch, lines, asked } = setup(() => 'job-1');
    stop = () => watch.stop();
    const first = consumer.worker as ReturnType<typeof fakeWorker>;
    await watch.check(1_000);
    expect(consumer.worker).toBe(first);
    await watch.check(6_000);
    expect((consumer.worker as ReturnType<typeof fakeWorker>).label).toBe('replacement 1');
    expect(first.closed).toBe(true);
    expect(asked[0]).toBe('td:{td-concurrent}:wait -1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\{td-concurrent\} replaced: job job-1 stayed first in line for 5 s/);
  });

  it('leaves a consumer alone when the head moves, the queue is empty, it is full, or it took a job meanwhile', async () => {
    let head: string | null = 'a';
    const { consumer, watch, lines } = setup(() => head);
    stop = () => watch.stop();
    const first = consumer.worker;
    await watch.check(1_000);
    head = 'b'; // the line moved: somebody takes jobs
    await watch.check(6_000);
    head = null; // empty
    await watch.check(11_000);
    head = 'c';
    await watch.check(16_000);
    consumer.active = 2; // full: the job waits for room, not for a stuck consumer
    await watch.check(21_000);
    consumer.active = 0;
    await watch.check(26_000);
    consumer.takenAt = 27_000; // it took a job after the first look at c
    await watch.check(31_000);
    expect(consumer.worker).toBe(first);
    expect(lines).toEqual([]);
  });
});
