import { tryParseJson } from '@tool-dispatch/shared';
import type { RoundLedger, RoundProgress, RoundRef } from '../ledger.js';
import { claimRoundScript, renewRoundScript } from './lua/claimRound-2.lua.js';
import { type RedisClient, runScript } from './lua/script.js';

/** How long a finished or abandoned round's progress is kept. */
const PROGRESS_TTL_MS = 24 * 60 * 60_000;

/**
 * Round leases in Redis: a sorted set of lease ends and a hash of owners under one `{r}` hash tag
 * (atomic claims on a cluster too); each round's progress under its session's tag.
 */
export class RedisLedger implements RoundLedger {
  private readonly leases: string;
  private readonly owners: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.leases = `${prefix}:{r}:leases`;
    this.owners = `${prefix}:{r}:owners`;
  }

  private member(r: RoundRef): string {
    return `${r.session}|${r.run}|${r.round}`;
  }

  private progressKey(r: RoundRef): string {
    return `${this.prefix}:{s:${r.session}}:progress:${r.run}:${r.round}`;
  }

  async claim(ref: RoundRef, owner: string, leaseMs: number, onlyIfLapsed: boolean): Promise<boolean> {
    const args = [this.member(ref), owner, Date.now(), leaseMs, onlyIfLapsed ? '1' : '0'];
    return (await runScript(this.redis, claimRoundScript, [this.leases, this.owners], args)) === 1;
  }

  async renew(ref: RoundRef, owner: string, leaseMs: number): Promise<boolean> {
    const args = [this.member(ref), owner, Date.now(), leaseMs];
    return (await runScript(this.redis, renewRoundScript, [this.leases, this.owners], args)) === 1;
  }

  async release(ref: RoundRef): Promise<void> {
    const m = this.member(ref);
    await Promise.all([
      this.redis.multi().zrem(this.leases, m).hdel(this.owners, m).exec(),
      this.redis.pexpire(this.progressKey(ref), 60_000),
    ]);
  }

  async lapsed(now: number, limit: number): Promise<RoundRef[]> {
    const members = await this.redis.zrangebyscore(this.leases, '-inf', `(${now}`, 'LIMIT', 0, limit);
    return members.flatMap((m) => {
      const [session, run, round] = m.split('|');
      return session && run && round ? [{ session, run, round }] : [];
    });
  }

  async save(ref: RoundRef, progress: RoundProgress): Promise<void> {
    await this.redis.set(this.progressKey(ref), JSON.stringify(progress), 'PX', PROGRESS_TTL_MS);
  }

  async load(ref: RoundRef): Promise<RoundProgress | null> {
    const p = tryParseJson(await this.redis.get(this.progressKey(ref)));
    return p && typeof p === 'object' ? (p as RoundProgress) : null;
  }
}
