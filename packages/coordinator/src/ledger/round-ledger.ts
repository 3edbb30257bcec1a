import type { NormalCall } from '../rules/normalize-call.js';
import type { Decision } from '../rules/preflight.js';

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
 * Which coordinators are alive, and the rounds each is running, so the rounds of one that died
 * are found and finished by another (DESIGN.md distributed shape). A coordinator renews one
 * lease for itself (not one per round); a round is listed under its owner before it begins and
 * comes off the list with a later heartbeat once finished. The round itself (its calls, its
 * owner, for fencing) lives in the Store (`beginRound`, `takeRound`, `commitRound`).
 */
export interface RoundLedger {
  /** Keeps `owner` alive for `leaseMs` more, and takes the rounds it finished off its list. */
  heartbeat(owner: string, leaseMs: number, finished: readonly RoundRef[]): Promise<void>;
  /** Lists a round under its owner (before the round is begun). */
  track(ref: RoundRef, owner: string): Promise<void>;
  /**
   * Adopts the list of one coordinator whose lease lapsed before `now` onto `owner`'s, atomically
   * (so one adopter gets each round); null when no lease lapsed.
   */
  adoptLapsed(owner: string, now: number): Promise<{ from: string; rounds: RoundRef[] } | null>;
  /** A coordinator leaving with every round finished: it and its list go. */
  leave(owner: string): Promise<void>;
}

/** `session|run|round` (ids never contain `|`). */
export const roundMember = (r: RoundRef) => `${r.session}|${r.run}|${r.round}`;

export function parseRoundMember(member: string): RoundRef | undefined {
  const [session, run, round] = member.split('|');
  return session && run && round ? { session, run, round } : undefined;
}

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

  async leave(owner: string): Promise<void> {
    this.alive.delete(owner);
    this.lists.delete(owner);
  }
}
