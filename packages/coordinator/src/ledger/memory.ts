import type { RoundRef } from '../model.js';
import { type RoundLedger, roundMember } from './round-ledger.js';

/** In-process ledger (tests; a single embedded process has nobody to take over from). */
export class MemoryLedger implements RoundLedger {
  private readonly alive = new Map<string, number>();
  private readonly lists = new Map<string, Map<string, RoundRef>>();

  constructor(private readonly now: () => number = Date.now) {}

  private list(owner: string): Map<string, RoundRef> {
    let list = this.lists.get(owner);
    if (!list) {
      list = new Map();
      this.lists.set(owner, list);
    }
    return list;
  }

  async heartbeat(owner: string, leaseMs: number, finished: readonly RoundRef[]): Promise<void> {
    this.alive.set(owner, this.now() + leaseMs);
    for (const r of finished) this.lists.get(owner)?.delete(roundMember(r));
  }

  async track(ref: RoundRef, owner: string): Promise<void> {
    this.list(owner).set(roundMember(ref), ref);
  }

  async adoptLapsed(owner: string, now: number): Promise<{ from: string; rounds: RoundRef[] } | null> {
    const lapsed = [...this.alive].filter(([id, until]) => id !== owner && until < now).sort((a, b) => a[1] - b[1]);
    const from = lapsed[0]?.[0];
    if (from === undefined) return null;
    this.alive.delete(from);
    const rounds = [...(this.lists.get(from)?.values() ?? [])];
    this.lists.delete(from);
    for (const r of rounds) this.list(owner).set(roundMember(r), r);
    return { from, rounds };
  }

  async isListed(ref: RoundRef, owner: string): Promise<boolean> {
    return this.lists.get(owner)?.has(roundMember(ref)) ?? false;
  }

  async leave(owner: string): Promise<void> {
    this.alive.delete(owner);
    this.lists.delete(owner);
  }
}
