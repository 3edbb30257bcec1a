import type { CallResult } from '@tool-dispatch/shared';
import type { NormalCall } from './normalize-call.js';
import type { Decision } from './preflight.js';

/** Names one round. */
export interface RoundRef {
  session: string;
  run: string;
  round: string;
}

/** A pass-1 decision as stored (PlannedCall without the spec, which is re-read from the catalog). */
export interface StoredPlanned {
  call: NormalCall;
  name: string;
  args: Record<string, unknown>;
  key: string;
  dedupable: boolean;
  cacheable: boolean;
  paths?: string[];
  decision: Decision;
}

/**
 * How far a round got, so another coordinator can finish it (DESIGN.md distributed shape):
 * `preflight` (only the calls are known), `execute` (pass 1 and the gate are decided), or
 * `commit` (every result is known).
 */
export interface RoundProgress {
  phase: 'preflight' | 'execute' | 'commit';
  calls: unknown[];
  planned?: StoredPlanned[];
  results?: CallResult[];
}

/**
 * Leases on running rounds plus their stored progress. The owner renews its lease while it works;
 * a lease that lapses (its coordinator died) may be claimed by any coordinator, which resumes the
 * round from its progress. Claiming is atomic, so one coordinator at a time owns a round.
 */
export interface RoundLedger {
  /** Takes the lease (a new round: unconditionally; a takeover: only when lapsed). */
  claim(ref: RoundRef, owner: string, leaseMs: number, onlyIfLapsed: boolean): Promise<boolean>;
  /** Extends the lease while `owner` still holds it; false when it was lost. */
  renew(ref: RoundRef, owner: string, leaseMs: number): Promise<boolean>;
  release(ref: RoundRef): Promise<void>;
  /** Rounds whose lease lapsed before `now`, oldest first. */
  lapsed(now: number, limit: number): Promise<RoundRef[]>;
  save(ref: RoundRef, progress: RoundProgress): Promise<void>;
  load(ref: RoundRef): Promise<RoundProgress | null>;
}

const refKey = (r: RoundRef) => `${r.session}|${r.run}|${r.round}`;

/** In-process ledger (tests, and a single embedded process where no takeover can happen). */
export class MemoryLedger implements RoundLedger {
  private readonly leases = new Map<string, { ref: RoundRef; owner: string; until: number }>();
  private readonly progress = new Map<string, RoundProgress>();

  constructor(private readonly now: () => number = Date.now) {}

  async claim(ref: RoundRef, owner: string, leaseMs: number, onlyIfLapsed: boolean): Promise<boolean> {
    const held = this.leases.get(refKey(ref));
    if (onlyIfLapsed && (!held || held.until >= this.now())) return false;
    this.leases.set(refKey(ref), { ref, owner, until: this.now() + leaseMs });
    return true;
  }

  async renew(ref: RoundRef, owner: string, leaseMs: number): Promise<boolean> {
    const held = this.leases.get(refKey(ref));
    if (!held || held.owner !== owner) return false;
    held.until = this.now() + leaseMs;
    return true;
  }

  async release(ref: RoundRef): Promise<void> {
    this.leases.delete(refKey(ref));
    this.progress.delete(refKey(ref));
  }

  async lapsed(now: number, limit: number): Promise<RoundRef[]> {
    return [...this.leases.values()]
      .filter((l) => l.until < now)
      .sort((a, b) => a.until - b.until)
      .slice(0, limit)
      .map((l) => l.ref);
  }

  async save(ref: RoundRef, progress: RoundProgress): Promise<void> {
    this.progress.set(refKey(ref), structuredClone(progress));
  }

  async load(ref: RoundRef): Promise<RoundProgress | null> {
    const p = this.progress.get(refKey(ref));
    return p ? structuredClone(p) : null;
  }
}
