import { type RedisKeys, redisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import { parseSettlePendingReply, settlePendingScript } from '../support/lua/settlePending-2.lua.js';
import { duplicateClient, type RedisClient, runScript } from '../support/redis-client.js';
import type { AnswerOutcome, ConfirmAnswer, ConfirmDecision, ConfirmHub, PendingConfirmation } from './confirm-hub.js';
import { AnswerConfirmStatus, answerConfirmScript, parseAnswerConfirmReply } from './lua/answerConfirm-2.lua.js';

export interface RedisConfirmHubOptions {
  /** A connection the caller owns; the hub duplicates it once for its pub/sub subscription. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
  /** How often a requester re-reads decisions, in case a pub/sub message was lost (default 1 s). */
  pollIntervalMs?: number;
}

/** How long a decision stays readable after it is made. */
const DECIDED_TTL_MS = 60 * 60_000;
/** Pending entries outlive their timeout by this much, so a requester that died does not leave them forever. */
const PENDING_GRACE_MS = 60_000;

interface Waiter {
  session: string;
  decide(decision: ConfirmDecision): void;
}

/** As stored: the confirmation plus its place in its round, to list a round's confirmations in call order. */
interface StoredPending extends PendingConfirmation {
  order: number;
}

function toPending({ order: _order, ...item }: StoredPending): PendingConfirmation {
  return item;
}

interface AnswerMessage {
  confirmationId: string;
  decision: ConfirmDecision;
}

/**
 * Confirmations shared by every coordinator: pending ones in a per-session hash, answers claimed
 * atomically (Lua) and delivered to the requesting coordinator over pub/sub, with a poll of the
 * recorded decisions as the safety net.
 */
export class RedisConfirmHub implements ConfirmHub {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly pollIntervalMs: number;
  private readonly subscriber: RedisClient;
  private readonly subscribed: Promise<unknown>;
  private readonly waiters = new Map<string, Waiter>();

  constructor(options: RedisConfirmHubOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.subscriber = duplicateClient(this.redis);
    this.subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    this.subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    this.subscribed = this.subscriber.subscribe(this.keys.confirmChannel());
    this.subscribed.catch(() => undefined);
  }

  async request(
    items: readonly PendingConfirmation[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<ConfirmDecision[]> {
    if (items.length === 0) return [];
    const { timeoutMs, signal } = options;
    const round = new RoundDecisions(items);
    const decide = (id: string, decision: ConfirmDecision) => {
      if (round.decide(id, decision)) this.waiters.delete(id);
    };
    for (const item of items) {
      this.waiters.set(item.confirmationId, {
        session: item.session,
        decide: function decided(d) {
          decide(item.confirmationId, d);
        },
      });
    }
    const undecided = () => round.undecided();
    const settleRest = (by: 'timeout' | 'cancelled') => {
      this.settle(undecided(), { approve: false, remember: false, by }).then(
        (settled) => {
          for (const [id, d] of settled) decide(id, d);
        },
        () => {
          // Redis unreachable: decide locally so the round is not stuck; the entries expire on their own.
          for (const item of undecided()) decide(item.confirmationId, { approve: false, remember: false, by });
        },
      );
    };
    const onAbort = () => settleRest('cancelled');
    const timer = setTimeout(
      function confirmTimedOut() {
        settleRest('timeout');
      },
      Math.max(0, timeoutMs),
    );
    const poll = setInterval(() => this.pollDecisions(undecided(), decide), this.pollIntervalMs);
    try {
      await this.subscribed;
      await this.putPending(items, timeoutMs);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      await round.done;
    } catch (e) {
      for (const item of items) this.waiters.delete(item.confirmationId);
      throw e;
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
      signal.removeEventListener('abort', onAbort);
    }
    return round.inOrder();
  }

  /** The safety net under the pub/sub message: decisions stored meanwhile, read back. */
  private pollDecisions(items: readonly PendingConfirmation[], decide: (id: string, d: ConfirmDecision) => void): void {
    this.readDecisions(items).then(
      (found) => {
        for (const [id, d] of found) decide(id, d);
      },
      () => undefined,
    );
  }

  async answer(session: string, idOrCallId: string, decision: ConfirmAnswer): Promise<AnswerOutcome> {
    const full: ConfirmDecision = {
      approve: decision.approve,
      remember: decision.remember,
      by: 'person',
      who: decision.who ?? 'person',
      at: Date.now(),
    };
    const keys = [this.keys.confirmPending(session), this.keys.confirmDecided(session)];
    const args = [idOrCallId, JSON.stringify(full), DECIDED_TTL_MS];
    const reply = parseAnswerConfirmReply(await runScript(this.redis, answerConfirmScript, keys, args));
    if (reply.status === AnswerConfirmStatus.NotFound) return { kind: 'not_found' };
    if (reply.status === AnswerConfirmStatus.Ambiguous) return { kind: 'ambiguous', count: reply.count };
    const confirmation = toPending(tryParseJson(reply.confirmation) as StoredPending);
    // Settle here at once when this coordinator is the requester; tell the others over pub/sub.
    this.waiters.get(confirmation.confirmationId)?.decide(full);
    const message: AnswerMessage = { confirmationId: confirmation.confirmationId, decision: full };
    await this.redis.publish(this.keys.confirmChannel(), JSON.stringify(message));
    return { kind: 'answered', confirmation };
  }

  async pending(session: string): Promise<PendingConfirmation[]> {
    const values = await this.redis.hvals(this.keys.confirmPending(session));
    return values
      .map((v) => tryParseJson(v) as StoredPending | undefined)
      .filter((p): p is StoredPending => p !== undefined)
      .sort((a, b) => a.createdAt - b.createdAt || a.round.localeCompare(b.round) || a.order - b.order)
      .map(toPending);
  }

  /** Cancels the confirmations this coordinator waits for, then drops its subscription. */
  async close(): Promise<void> {
    const bySession = new Map<string, string[]>();
    for (const [id, w] of this.waiters) bySession.set(w.session, [...(bySession.get(w.session) ?? []), id]);
    const cancelled: ConfirmDecision = { approve: false, remember: false, by: 'cancelled' };
    await Promise.all(
      [...bySession].map(([session, ids]) =>
        runScript(
          this.redis,
          settlePendingScript,
          [this.keys.confirmPending(session), this.keys.confirmDecided(session)],
          [JSON.stringify(cancelled), DECIDED_TTL_MS, ...ids],
        ).catch(() => undefined),
      ),
    );
    for (const w of [...this.waiters.values()]) w.decide(cancelled);
    this.subscriber.disconnect();
  }

  private async putPending(items: readonly PendingConfirmation[], timeoutMs: number): Promise<void> {
    const ttl = Math.ceil(timeoutMs) + PENDING_GRACE_MS;
    const multi = this.redis.multi();
    items.forEach((item, order) => {
      const key = this.keys.confirmPending(item.session);
      const stored: StoredPending = { ...item, order };
      multi.hset(key, item.confirmationId, JSON.stringify(stored));
      // Never shorten a TTL another round set: NX for a fresh hash, GT to extend.
      multi.pexpire(key, ttl, 'NX').pexpire(key, ttl, 'GT');
    });
    await multi.exec();
  }

  /** Applies `decision` to those still pending; returns what holds for each (an earlier answer wins). */
  private async settle(
    items: readonly PendingConfirmation[],
    decision: ConfirmDecision,
  ): Promise<Map<string, ConfirmDecision>> {
    const out = new Map<string, ConfirmDecision>();
    for (const [session, group] of groupBySession(items)) {
      const ids = group.map((i) => i.confirmationId);
      const keys = [this.keys.confirmPending(session), this.keys.confirmDecided(session)];
      const args = [JSON.stringify(decision), DECIDED_TTL_MS, ...ids];
      const reply = parseSettlePendingReply(await runScript(this.redis, settlePendingScript, keys, args));
      ids.forEach((id, i) => {
        out.set(id, (tryParseJson(reply[i]) as ConfirmDecision | undefined) ?? decision);
      });
    }
    return out;
  }

  private async readDecisions(items: readonly PendingConfirmation[]): Promise<Map<string, ConfirmDecision>> {
    const out = new Map<string, ConfirmDecision>();
    for (const [session, group] of groupBySession(items)) {
      const ids = group.map((i) => i.confirmationId);
      const values = await this.redis.hmget(this.keys.confirmDecided(session), ...ids);
      ids.forEach((id, i) => {
        const d = tryParseJson(values[i]) as ConfirmDecision | undefined;
        if (d) out.set(id, d);
      });
    }
    return out;
  }

  private onMessage(channel: string, message: string): void {
    if (channel !== this.keys.confirmChannel()) return;
    const parsed = tryParseJson(message) as AnswerMessage | undefined;
    if (!parsed || typeof parsed.confirmationId !== 'string') return;
    this.waiters.get(parsed.confirmationId)?.decide(parsed.decision);
  }
}

function groupBySession(items: readonly PendingConfirmation[]): Map<string, PendingConfirmation[]> {
  const out = new Map<string, PendingConfirmation[]>();
  for (const item of items) out.set(item.session, [...(out.get(item.session) ?? []), item]);
  return out;
}

/** The decisions of one round's confirmations as they arrive (message, poll, timeout or cancel); the first per id counts. */
class RoundDecisions {
  readonly done: Promise<void>;
  private readonly decisions = new Map<string, ConfirmDecision>();
  private finish: () => void = () => {};

  constructor(private readonly items: readonly PendingConfirmation[]) {
    this.done = new Promise<void>((resolve) => {
      this.finish = resolve;
    });
  }

  /** True when this was the id's first decision. */
  decide(id: string, decision: ConfirmDecision): boolean {
    if (this.decisions.has(id)) return false;
    this.decisions.set(id, decision);
    if (this.decisions.size === this.items.length) this.finish();
    return true;
  }

  undecided(): PendingConfirmation[] {
    return this.items.filter((i) => !this.decisions.has(i.confirmationId));
  }

  /** Every decision, in the items' order (once `done`). */
  inOrder(): ConfirmDecision[] {
    return this.items.map((i) => {
      const d = this.decisions.get(i.confirmationId);
      if (!d) throw new Error(`confirmation ${i.confirmationId} has no decision yet`);
      return d;
    });
  }
}
