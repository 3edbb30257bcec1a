import { newId } from '@tool-dispatch/shared';
import { tryParseJson } from '@tool-dispatch/shared/redis';
import { duplicateClient, type RedisClient } from '../support/redis-client.js';
import { aliveKey } from './redis.js';
import type { RunCancelBus } from './round-ledger.js';

/** How long a cancel waits for the other live coordinators' counts before it answers with those it has. */
export const RUN_CANCEL_REPLY_MS = 3_000;

type Message =
  | { kind: 'cancel'; id: string; from: string; session: string; run: string; round?: string }
  | { kind: 'cancelled'; id: string; from: string; cancelled: number };

interface Asked {
  waitingFor: Set<string>;
  cancelled: number;
  done: () => void;
}

/**
 * RunCancelBus over Redis pub/sub: a cancel goes out on one channel to every coordinator, each
 * answers its count on the same channel, and the asker waits for the coordinators whose lease is
 * live (the ledger's `{coordinators}:alive` set), at most RUN_CANCEL_REPLY_MS.
 */
export class RedisRunCancels implements RunCancelBus {
  private readonly subscriber: RedisClient;
  private readonly channel: string;
  private readonly alive: string;
  private readonly asked = new Map<string, Asked>();
  private subscribed: Promise<unknown> | undefined;
  private cancelHere: ((session: string, run: string, round?: string) => Promise<number>) | undefined;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly coordinatorId: string,
    private readonly replyMs = RUN_CANCEL_REPLY_MS,
  ) {
    this.channel = `${prefix}:run-cancel`;
    this.alive = aliveKey(prefix);
    this.subscriber = duplicateClient(redis);
    this.subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    this.subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.channel) this.onMessage(tryParseJson(text) as Message | undefined);
    });
  }

  start(cancelHere: (session: string, run: string, round?: string) => Promise<number>): Promise<void> {
    this.cancelHere = cancelHere;
    this.subscribed ??= this.subscriber.subscribe(this.channel);
    return this.subscribed.then(() => undefined);
  }

  async cancelElsewhere(session: string, run: string, round?: string): Promise<number> {
    await this.subscribed;
    const others = (await this.redis.zrangebyscore(this.alive, Date.now(), '+inf')).filter(
      (c) => c !== this.coordinatorId,
    );
    if (others.length === 0) return 0;
    const id = newId('cxl');
    let timer: NodeJS.Timeout | undefined;
    const asked: Asked = { waitingFor: new Set(others), cancelled: 0, done: () => {} };
    const answered = new Promise<void>((resolve) => {
      asked.done = resolve;
      timer = setTimeout(resolve, this.replyMs);
    });
    this.asked.set(id, asked);
    try {
      await this.publish({ kind: 'cancel', id, from: this.coordinatorId, session, run, ...(round ? { round } : {}) });
      await answered;
      return asked.cancelled;
    } finally {
      clearTimeout(timer);
      this.asked.delete(id);
    }
  }

  private onMessage(m: Message | undefined): void {
    if (!m || m.from === this.coordinatorId) return;
    if (m.kind === 'cancelled') {
      const asked = this.asked.get(m.id);
      if (!asked?.waitingFor.delete(m.from)) return;
      asked.cancelled += m.cancelled;
      if (asked.waitingFor.size === 0) asked.done();
      return;
    }
    const cancelHere = this.cancelHere;
    if (m.kind !== 'cancel' || !cancelHere) return;
    cancelHere(m.session, m.run, typeof m.round === 'string' ? m.round : undefined).then(
      (cancelled) => this.publish({ kind: 'cancelled', id: m.id, from: this.coordinatorId, cancelled }),
      () => this.publish({ kind: 'cancelled', id: m.id, from: this.coordinatorId, cancelled: 0 }),
    );
  }

  private async publish(m: Message): Promise<void> {
    await this.redis.publish(this.channel, JSON.stringify(m)).catch(() => undefined);
  }

  async close(): Promise<void> {
    for (const asked of this.asked.values()) asked.done();
    this.subscriber.disconnect();
  }
}
