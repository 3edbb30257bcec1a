import type { Worker } from 'bullmq';

/** What the watch needs of Redis: the head of a queue's wait list. */
interface WaitListReader {
  lindex(key: string, index: number): Promise<string | null>;
}

/** One BullMQ consumer of one queue, as the watch sees it. */
export interface WatchedConsumer {
  /** The queue's name (a shard's, hash tag included). */
  readonly queueName: string;
  /** Its BullMQ concurrency. */
  readonly concurrency: number;
  /** The BullMQ worker consuming it now (replaced by one from `make`). */
  worker: Worker;
  /** A new BullMQ worker for the queue, with the same processor and options. */
  readonly make: () => Worker;
  /** Jobs it runs now. */
  active: number;
  /** When it last took a job (ms since the epoch), or when it started. */
  takenAt: number;
}

export interface StuckConsumerWatchOptions {
  redis: WaitListReader;
  /** BullMQ's key prefix (TD_PREFIX). */
  prefix: string;
  consumers: readonly WatchedConsumer[];
  log(line: string): void;
  onError(error: Error): void;
  /** How often the wait lists are looked at (default STUCK_CHECK_MS). */
  checkMs?: number;
}

/** How often each queue's wait list is looked at. */
export const STUCK_CHECK_MS = 5_000;

/**
 * Replaces a BullMQ consumer that stopped taking jobs. On a Redis Cluster, a BullMQ worker whose
 * queue's primary went away and came back can stop fetching for good (its blocking connection's
 * reconnect never settles; reproduced with BullMQ 6.7 and ioredis 6 by killing the primary for
 * 4–6 s), and the jobs of that queue then wait for ever. Seen from outside: the same job at the
 * head of the queue's wait list at two looks `checkMs` apart, while the consumer had room for a
 * job at both and took none in between. A live consumer takes a waiting job within
 * milliseconds, so that never happens to it. The stuck one is closed (its running jobs finish;
 * the close is not waited for) and a new one takes its place.
 */
export class StuckConsumerWatch {
  private readonly heads = new Map<WatchedConsumer, { job: string; seenAt: number }>();
  private readonly timer: NodeJS.Timeout;
  private checking = false;
  private stopped = false;
  /** Replaced workers whose close has not finished. */
  readonly retired = new Set<Worker>();

  constructor(private readonly options: StuckConsumerWatchOptions) {
    this.timer = setInterval(() => {
      if (this.checking || this.stopped) return;
      this.checking = true;
      this.check()
        .catch((e: unknown) => options.onError(e instanceof Error ? e : new Error(String(e))))
        .finally(() => {
          this.checking = false;
        });
    }, options.checkMs ?? STUCK_CHECK_MS);
    this.timer.unref();
  }

  /** Looks at every consumer's queue once (the timer calls it; tests may too). */
  async check(now = Date.now()): Promise<void> {
    await Promise.all(this.options.consumers.map((c) => this.checkOne(c, now)));
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private async checkOne(consumer: WatchedConsumer, now: number): Promise<void> {
    const head = await this.options.redis.lindex(`${this.options.prefix}:${consumer.queueName}:wait`, -1);
    const seen = this.heads.get(consumer);
    // Only a consumer with room at both looks counts: a full one leaves jobs waiting by design.
    if (!head || consumer.active >= consumer.concurrency) {
      this.heads.delete(consumer);
      return;
    }
    if (!seen || seen.job !== head || consumer.takenAt >= seen.seenAt) {
      this.heads.set(consumer, { job: head, seenAt: now });
      return;
    }
    if (this.stopped) return;
    this.heads.delete(consumer);
    const waited = Math.round((now - seen.seenAt) / 1000);
    this.options.log(
      `consumer of ${consumer.queueName} replaced: job ${head} stayed first in line for ${waited} s while it had room and took nothing (its Redis connection stuck?)`,
    );
    const old = consumer.worker;
    this.retired.add(old);
    old
      .close()
      .catch(() => undefined)
      .finally(() => this.retired.delete(old));
    consumer.worker = consumer.make();
    consumer.takenAt = now;
  }
}
