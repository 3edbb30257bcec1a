import type { RoundRef } from '../model.js';
import { type RedisClient, runScript } from '../support/redis-client.js';
import { adoptScript, parseAdoptReply } from './lua/adopt-4.lua.js';
import { heartbeatScript, parseHeartbeatReply } from './lua/heartbeat-2.lua.js';
import { parseRoundMember, type RoundLedger, roundMember } from './round-ledger.js';

/** How long the liveness set and a coordinator's round list outlive its last heartbeat. */
const LIST_TTL_MS = 24 * 60 * 60_000;
/** How long an adoption's record answers its adopter's resent script (adopt-4). */
const ADOPTED_TTL_MS = 60_000;
/** Lapsed coordinators looked at per adoption attempt. */
const SCAN = 10;

/** The sorted set of coordinator lease ends (member: coordinator id). */
export const aliveKey = (prefix: string) => `${prefix}:{coordinators}:alive`;

/**
 * Coordinator leases and round lists in Redis, under one `{coordinators}` hash tag (adoption is
 * one atomic script on a cluster too): a sorted set of lease ends, and a set of round members
 * per coordinator.
 */
export class RedisLedger implements RoundLedger {
  private readonly alive: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.alive = aliveKey(prefix);
  }

  private list(owner: string): string {
    return `${this.prefix}:{coordinators}:rounds:${owner}`;
  }

  async heartbeat(owner: string, leaseMs: number, finished: readonly RoundRef[]): Promise<void> {
    const args = [owner, Date.now() + leaseMs, LIST_TTL_MS, ...finished.map(roundMember)];
    parseHeartbeatReply(await runScript(this.redis, heartbeatScript, [this.alive, this.list(owner)], args));
  }

  async track(ref: RoundRef, owner: string): Promise<void> {
    await this.redis.sadd(this.list(owner), roundMember(ref));
  }

  async adoptLapsed(owner: string, now: number): Promise<{ from: string; rounds: RoundRef[] } | null> {
    const lapsed = await this.redis.zrangebyscore(this.alive, '-inf', `(${now}`, 'LIMIT', 0, SCAN);
    for (const from of lapsed) {
      if (from === owner) continue;
      const keys = [this.alive, this.list(from), this.list(owner), `${this.prefix}:{coordinators}:adopted:${from}`];
      const args = [from, now, LIST_TTL_MS, owner, ADOPTED_TTL_MS];
      const members = parseAdoptReply(await runScript(this.redis, adoptScript, keys, args));
      if (!members) continue; // renewed, or another coordinator adopted it first
      return { from, rounds: members.map(parseRoundMember).filter((r) => r !== undefined) };
    }
    return null;
  }

  async isListed(ref: RoundRef, owner: string): Promise<boolean> {
    return (await this.redis.sismember(this.list(owner), roundMember(ref))) === 1;
  }

  async leave(owner: string): Promise<void> {
    await this.redis.multi().zrem(this.alive, owner).del(this.list(owner)).exec();
  }
}
