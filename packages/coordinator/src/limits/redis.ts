// long-file: acquire, release, renew and the wake-ups share one per-tick batching state and the waiters of this process; split, each part would need the others' private fields.
import { newId } from '@tool-dispatch/shared';
import { PLACE_LEASE_MS, type RedisKeys, redisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import type { RunPlacesAsk, RunPlacesGive } from '../model.js';
import type { LimitNow } from '../rules/named-limits.js';
import { getOrCreate } from '../support/maps.js';
import { duplicateClient, type RedisClient, runScript } from '../support/redis-client.js';
import { BegunPlaces } from './begun-places.js';
import { HoldTimes } from './hold-times.js';
import type { LimitRelease, LimitStage, Limits, LimitWait } from './limits.js';
import { scopeKey } from './limits.js';
import { type AcquireLimitsReply, acquireLimitsScript, parseAcquireLimitsReply } from './lua/acquireLimits-5n.lua.js';
import { parseRenewLimitReply, renewLimitScript } from './lua/renewLimit-4.lua.js';
import type { Grant, TakeBatch, WakeMessage } from './redis-grant.js';
import { acquireKeysOf, batchKey, type Group, keysOf, peekLimits, stageArg } from './redis-layout.js';
import { ReleaseBatches } from './release-batches.js';

export interface RedisLimitsOptions {
  /** A connection the caller owns; duplicated once for the wake-up subscription. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
  /** This coordinator's id: its places are named after it. */
  owner?: string;
  /**
   * How long a place or a turn outlives its coordinator's last renewal (default PLACE_LEASE_MS,
   * 15 s: three coordinator leases, so a coordinator taking a dead one's rounds over finds their
   * places held).
   */
  leaseMs?: number;
  /** Infrastructure errors (a release or renewal Redis refused); the lease puts such places right. */
  onError?: (error: Error) => void;
}

const CLOSED = 'the coordinator is closing: its limits stopped';

/**
 * Limits every coordinator shares, in the scope's hash slot (`{s:<session>}` for a run's): per
 * limit a ZSET of held places and one of waiters in arrival order, each entry leased by its
 * coordinator and renewed a third of a lease at a time. A release that frees a place some call
 * waits for publishes the limit on one channel, and each coordinator looks again for its waiters
 * there (no polling); a waiter also looks again when the earliest lease ahead of it is due,
 * since nothing tells of a lease lapsing (a coordinator that died): at most one check per lease
 * per waiting limit, which also bounds the cost of a lost message.
 */
export class RedisLimits implements Limits {
  readonly shared = true;
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly owner: string;
  private readonly leaseMs: number;
  private readonly keyTtlMs: number;
  private readonly onError: (error: Error) => void;
  private readonly subscriber: RedisClient;
  private next = 0;
  private closed = false;
  /** Grants not yet granted nor refused: a close ends them all. */
  private readonly unsettled = new Set<Grant>();
  /** Tickets holding or waiting at each limit (base), renewed together. */
  private readonly live = new Map<string, Set<string>>();
  /** This coordinator's waiters at each limit, in the order they arrived. */
  private readonly waiting = new Map<string, Grant[]>();
  private readonly dueTimers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly checking = new Map<string, boolean>();
  private readonly bySignal = new Map<AbortSignal, { grants: Set<Grant>; onAbort: () => void }>();
  private readonly renewal: NodeJS.Timeout;
  private readonly holds = new HoldTimes();
  private readonly takes = new Map<string, TakeBatch>();
  private readonly releases: ReleaseBatches;
  /** (v1.3) Rounds' places taken in their begin step. */
  private readonly begun: BegunPlaces;

  constructor(options: RedisLimitsOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.owner = options.owner ?? newId('coord');
    this.leaseMs = options.leaseMs ?? PLACE_LEASE_MS;
    this.keyTtlMs = Math.max(60_000, this.leaseMs * 10);
    this.onError = options.onError ?? (() => {});
    this.releases = new ReleaseBatches(this.redis, (base) => this.wake(base), this.onError);
    this.begun = new BegunPlaces({
      hold: (base, ticket) => getOrCreate(this.live, base, () => new Set()).add(ticket),
      forget: (base, ticket) => this.unlive(base, ticket),
      give: (base, concurrency, ticket) => {
        this.unlive(base, ticket);
        // The run's one stage: its concurrency is all a release reads of it.
        const stage: LimitStage = { scope: { limit: base }, name: base, concurrency, reason: 'run_limit' };
        this.releases.give({ stages: [stage], bases: [base] }, ticket);
      },
      wake: (base) => this.wake(base),
    });
    this.subscriber = duplicateClient(this.redis);
    this.subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    this.subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    this.subscriber.subscribe(this.keys.limitChannel()).catch(() => undefined);
    this.renewal = setInterval(() => this.renew(), Math.max(10, Math.floor(this.leaseMs / 3)));
    this.renewal.unref();
  }

  /** Never at once, whether a place is free being Redis's to say; except a place its round took at its begin (`took`). */
  tryAcquire(stages: readonly LimitStage[], ticket?: string): LimitRelease | undefined {
    const stage = stages[0];
    if (ticket === undefined || stages.length !== 1 || !stage) return undefined;
    return this.begun.claim(this.keys.limit(scopeKey(stage.scope), stage.name), ticket);
  }

  askAtBegin(stage: LimitStage, tickets: readonly string[]): RunPlacesAsk | undefined {
    // In the session's slot (the store's begin step), no rate, and room for all of them.
    if (!('session' in stage.scope) || stage.rate || tickets.length === 0 || tickets.length > stage.concurrency)
      return undefined;
    const base = this.keys.limit(scopeKey(stage.scope), stage.name);
    const { leaseMs, keyTtlMs } = this;
    return {
      held: `${base}:held`,
      wait: `${base}:wait`,
      concurrency: stage.concurrency,
      leaseMs,
      keyTtlMs,
      tickets: [...tickets],
    };
  }

  took(round: string, ask: RunPlacesAsk): void {
    this.begun.took(round, ask.held.slice(0, -':held'.length), ask);
  }

  giveBackAtCommit(round: string): RunPlacesGive | undefined {
    return this.begun.giveBackAtCommit(round);
  }

  roundEnded(round: string, committed?: { waiters: boolean }): void {
    this.begun.roundEnded(round, committed);
  }

  acquire(
    stages: readonly LimitStage[],
    signal?: AbortSignal,
    onWait?: (wait: LimitWait) => void,
    ticket?: string,
  ): Promise<LimitRelease> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    if (this.closed) return Promise.reject(new Error(CLOSED));
    // Asked one by one under a ticket whose place its round took: the place, held already, is this grant's.
    if (ticket !== undefined) this.begun.handOver(ticket);
    const grant: Grant = {
      ticket: ticket ?? `${this.owner}:${this.next++}`,
      groups: this.groupsOf(stages),
      held: 0,
      total: stages.length,
      waitStart: 0,
      done: false,
      onWait,
    };
    return new Promise<LimitRelease>((resolve, reject) => {
      this.unsettled.add(grant);
      grant.settle = (error) => {
        grant.settle = undefined;
        this.unsettled.delete(grant);
        if (signal) this.unwatch(signal, grant);
        if (error !== undefined) {
          this.release(grant);
          reject(error);
        } else {
          grant.grantedAt = Date.now();
          resolve(() => this.release(grant));
        }
      };
      if (signal) this.watch(signal, grant);
      this.advance(grant).catch((e: unknown) => grant.settle?.(e));
    });
  }

  /** One abort listener per signal for all its waiters: every call of a run waits on the run's one signal. */
  private watch(signal: AbortSignal, grant: Grant): void {
    let watched = this.bySignal.get(signal);
    if (!watched) {
      const grants = new Set<Grant>();
      const onAbort = () => {
        this.bySignal.delete(signal);
        for (const g of grants) g.settle?.(signal.reason ?? new Error('aborted'));
      };
      watched = { grants, onAbort };
      this.bySignal.set(signal, watched);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    watched.grants.add(grant);
  }

  private unwatch(signal: AbortSignal, grant: Grant): void {
    const watched = this.bySignal.get(signal);
    if (!watched) return;
    watched.grants.delete(grant);
    if (watched.grants.size > 0) return;
    this.bySignal.delete(signal);
    signal.removeEventListener('abort', watched.onAbort);
  }

  peek(stages: readonly LimitStage[]): Promise<LimitNow[]> {
    return peekLimits(this.redis, this.keys, this.holds, stages);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.renewal);
    for (const { timer } of this.dueTimers.values()) clearTimeout(timer);
    this.dueTimers.clear();
    // Every wait ends, those whose script is still out too (its reply may never come).
    for (const g of [...this.unsettled]) g.settle?.(new Error(CLOSED));
    this.subscriber.disconnect();
  }

  private groupsOf(stages: readonly LimitStage[]): Group[] {
    const groups: Group[] = [];
    let last: string | undefined;
    for (const stage of stages) {
      const tag = scopeKey(stage.scope);
      if (!Number.isInteger(stage.concurrency) || stage.concurrency < 1)
        throw new Error(`limit ${stage.name}: concurrency must be a positive integer, got ${stage.concurrency}`);
      if (tag !== last) groups.push({ stages: [], bases: [] });
      last = tag;
      const group = groups[groups.length - 1] as Group;
      group.stages.push(stage);
      group.bases.push(this.keys.limit(tag, stage.name));
    }
    return groups;
  }

  /** The group the grant's next stage is in, and that stage's place in it. */
  private nextStage(grant: Grant): { group: Group; from: number } {
    let at = grant.held;
    for (const group of grant.groups) {
      if (at < group.stages.length) return { group, from: at };
      at -= group.stages.length;
    }
    throw new Error('no stage left');
  }

  /** Takes the grant's stages in turn, each group in one script, until it holds them all or must wait. */
  private async advance(grant: Grant): Promise<void> {
    while (grant.held < grant.total) {
      if (grant.done) return;
      const { group, from } = this.nextStage(grant);
      const stages = group.stages.slice(from);
      const bases = group.bases.slice(from);
      const reply = await this.take(bases, stages, grant.ticket);
      if (grant.done) return;
      // Closed while the script ran: nothing would ever wake this wait.
      if (this.closed) throw new Error(CLOSED);
      for (const base of bases.slice(0, reply.granted + 1))
        getOrCreate(this.live, base, () => new Set()).add(grant.ticket);
      if (reply.granted > 0) this.stopWaiting(grant, stages[0] as LimitStage);
      grant.held += reply.granted;
      if (reply.granted < stages.length)
        return this.wait(grant, bases[reply.granted] as string, stages[reply.granted] as LimitStage, reply.due);
    }
    grant.settle?.();
  }

  private wait(grant: Grant, base: string, stage: LimitStage, dueMs: number): void {
    if (grant.waitingAt !== base) {
      grant.waitingAt = base;
      grant.waitStart = Date.now();
      getOrCreate(this.waiting, base, () => []).push(grant);
      // Places taken at a begin there (here or elsewhere) now go back as their calls end.
      if (stage.reason === 'run_limit') this.announceWaiting(base);
    }
    this.checkAt(base, dueMs > 0 ? Math.min(dueMs, this.leaseMs) : this.leaseMs);
  }

  /** A grant no longer waiting where it was: tells `onWait` of the wait it had. */
  private stopWaiting(grant: Grant, stage: LimitStage): void {
    const base = grant.waitingAt;
    if (!base) return;
    grant.waitingAt = undefined;
    this.unlist(grant, base);
    grant.onWait?.({ reason: stage.reason, limit: stage.name, startMs: grant.waitStart, endMs: Date.now() });
  }

  private unlist(grant: Grant, base: string): void {
    const list = this.waiting.get(base);
    const i = list?.indexOf(grant) ?? -1;
    if (list && i >= 0) list.splice(i, 1);
    if (list?.length === 0) {
      this.waiting.delete(base);
      const due = this.dueTimers.get(base);
      if (due) clearTimeout(due.timer);
      this.dueTimers.delete(base);
    }
  }

  /** A check of `base`'s waiters in `ms` (the earliest lease ahead of them), unless one comes sooner. */
  private checkAt(base: string, ms: number): void {
    const at = Date.now() + ms;
    const current = this.dueTimers.get(base);
    if (current && current.at <= at) return;
    if (current) clearTimeout(current.timer);
    // A little after the lease ends, so the check finds it lapsed.
    const timer = setTimeout(() => {
      this.dueTimers.delete(base);
      this.check(base);
    }, ms + 20);
    timer.unref();
    this.dueTimers.set(base, { at, timer });
  }

  /**
   * This coordinator's waiters at `base` look again, in arrival order (their scripts go out in
   * that order on the one connection, so Redis sees them so); one check at a time per limit, a
   * wake-up during it running one more after.
   */
  private check(base: string): void {
    if (this.checking.has(base)) {
      this.checking.set(base, true);
      return;
    }
    const list = this.waiting.get(base);
    if (!list || list.length === 0) return;
    this.checking.set(base, false);
    const runs = [...list].map((g) => this.advance(g).catch((e: unknown) => g.settle?.(e)));
    void Promise.all(runs).then(() => {
      const again = this.checking.get(base);
      this.checking.delete(base);
      if (again) this.check(base);
    });
  }

  /** Lets go of whatever the grant holds or waits for; wakes the waiters of limits that freed a place. */
  private release(grant: Grant): void {
    if (grant.done) return;
    grant.done = true;
    const { grantedAt } = grant;
    if (grantedAt !== undefined)
      for (const g of grant.groups)
        for (const s of g.stages) if (s.reason === 'named_limit') this.holds.record(s.name, Date.now() - grantedAt);
    if (grant.waitingAt) this.unlist(grant, grant.waitingAt);
    grant.waitingAt = undefined;
    this.releaseGroups(grant);
  }

  private releaseGroups(grant: Grant): void {
    for (const group of grant.groups) {
      for (const base of group.bases) this.unlive(base, grant.ticket);
      this.releases.give(group, grant.ticket);
    }
  }

  private unlive(base: string, ticket: string): void {
    const set = this.live.get(base);
    set?.delete(ticket);
    if (set?.size === 0) this.live.delete(base);
  }

  /**
   * One call's places at `stages` (one scope): asked with the other calls asking for the same
   * stages in this tick (a batch of a round), in one script, in the order they asked.
   */
  private take(bases: string[], stages: LimitStage[], ticket: string): Promise<AcquireLimitsReply> {
    return new Promise((resolve, reject) => {
      const key = batchKey(bases, stages);
      let batch = this.takes.get(key);
      if (!batch) {
        const fresh: TakeBatch = { bases, stages, asks: [] };
        this.takes.set(key, fresh);
        queueMicrotask(() => this.flushTakes(key, fresh));
        batch = fresh;
      }
      batch.asks.push({ ticket, resolve, reject });
    });
  }

  private flushTakes(key: string, batch: TakeBatch): void {
    this.takes.delete(key);
    const tickets = batch.asks.map((a) => a.ticket);
    const args = [this.leaseMs, this.keyTtlMs, ...batch.stages.map(stageArg), ...tickets];
    this.releases.whenLoaded(() =>
      runScript(this.redis, acquireLimitsScript, batch.bases.flatMap(acquireKeysOf), args)
        .then((reply) => {
          const replies = parseAcquireLimitsReply(reply, batch.stages.length, tickets.length);
          for (const [i, ask] of batch.asks.entries()) ask.resolve(replies[i] as AcquireLimitsReply);
        })
        .catch((e: unknown) => {
          for (const ask of batch.asks) ask.reject(e);
        }),
    );
  }

  /** A place freed at `base`: this coordinator's waiters look now; the others hear it over pub/sub. */
  private wake(base: string): void {
    this.check(base);
    const message: WakeMessage = { base, from: this.owner };
    this.redis.publish(this.keys.limitChannel(), JSON.stringify(message)).catch(() => undefined);
  }

  /** A call waits at `base` now: this coordinator's places taken at a begin there, and every other's, go back as their calls end. */
  private announceWaiting(base: string): void {
    this.begun.contended(base);
    const message: WakeMessage = { base, from: this.owner, waiting: true };
    this.redis.publish(this.keys.limitChannel(), JSON.stringify(message)).catch(() => undefined);
  }

  private onMessage(channel: string, message: string): void {
    if (channel !== this.keys.limitChannel()) return;
    const parsed = tryParseJson(message) as Partial<WakeMessage> | undefined;
    if (typeof parsed?.base !== 'string' || parsed.from === this.owner) return;
    if (parsed.waiting === true) this.begun.contended(parsed.base);
    else this.check(parsed.base);
  }

  /** Pushes back the leases of every place and turn this coordinator has; a waiter whose turn lapsed looks again. */
  private renew(): void {
    for (const [base, tickets] of this.live) {
      runScript(this.redis, renewLimitScript, keysOf(base), [this.leaseMs, this.keyTtlMs, ...tickets])
        .then((reply) => {
          const lost = parseRenewLimitReply(reply).filter((t) => this.live.get(base)?.has(t));
          if (lost.length === 0) return;
          if (this.waiting.get(base)?.some((g) => lost.includes(g.ticket))) this.check(base);
          else this.onError(new Error(`limit ${base}: ${lost.length} place(s) lapsed before their call ended`));
        })
        .catch((e: unknown) => this.onError(asError(e, 'renewal')));
    }
  }
}

function asError(e: unknown, what: string): Error {
  return e instanceof Error ? e : new Error(`limits ${what}: ${String(e)}`);
}
