import type { InputAnswer, InputSettlement, ParkedInput } from '../model.js';
import { getOrCreate } from '../support/maps.js';
import { byParkOrder, type FindInput, type InputHub, type InputWait, type ParkOutcome } from './input-hub.js';

/** How long a settlement stays readable after the call ended (as in the Redis hub). */
const SETTLED_KEEP_MS = 60 * 60_000;

/** Embedded-mode parked calls: entries and waiting promises in this process. */
export class MemoryInputHub implements InputHub {
  readonly shared: boolean = false;
  private readonly parked = new Map<string, ParkedInput>();
  private readonly settled = new Map<string, { settlement: InputSettlement; at: number }>();
  private readonly waiters = new Map<string, Set<(w: InputWait) => void>>();

  constructor(private readonly now: () => number = Date.now) {}

  async park(input: ParkedInput): Promise<ParkOutcome> {
    this.prune();
    const settled = this.settled.get(input.inputId);
    if (settled) return { kind: 'settled', settlement: settled.settlement };
    const kept = this.parked.get(input.inputId);
    if (kept) return { kind: 'parked', input: kept, fresh: false };
    this.parked.set(input.inputId, input);
    return { kind: 'parked', input, fresh: true };
  }

  wait(input: ParkedInput, options: { signal: AbortSignal; release?: AbortSignal }): Promise<InputWait> {
    const held = this.settled.get(input.inputId);
    if (held) return Promise.resolve(held.settlement);
    const { signal, release } = options;
    const { inputId } = input;
    return new Promise<InputWait>((resolve) => {
      let done = false;
      const finish = (w: InputWait) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        release?.removeEventListener('abort', onRelease);
        const set = this.waiters.get(inputId);
        set?.delete(finish);
        if (set?.size === 0) this.waiters.delete(inputId);
        resolve(w);
      };
      const settleAs = (s: InputSettlement) => finish(this.settleOne(inputId, s));
      const onAbort = () => settleAs({ by: 'cancelled' });
      const onRelease = () => finish({ by: 'released' });
      const timer = setTimeout(
        function inputTimedOut() {
          settleAs({ by: 'timeout' });
        },
        Math.max(0, input.deadline - this.now()),
      );
      getOrCreate(this.waiters, inputId, () => new Set()).add(finish);
      if (signal.aborted) onAbort();
      else if (release?.aborted) onRelease();
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        release?.addEventListener('abort', onRelease, { once: true });
      }
    });
  }

  async settle(_session: string, inputIds: readonly string[], settlement: InputSettlement): Promise<InputSettlement[]> {
    return inputIds.map((id) => this.settleOne(id, settlement));
  }

  async find(session: string, idOrCallId: string): Promise<FindInput> {
    const live = this.live(session);
    const byId = live.find((i) => i.inputId === idOrCallId);
    if (byId) return { kind: 'found', input: byId };
    const byCall = live.filter((i) => i.callId === idOrCallId);
    if (byCall.length > 1) return { kind: 'ambiguous', count: byCall.length };
    const [only] = byCall;
    return only ? { kind: 'found', input: only } : { kind: 'not_found' };
  }

  async answer(session: string, inputId: string, answer: InputAnswer): Promise<'answered' | 'not_found'> {
    const entry = this.parked.get(inputId);
    if (!entry || entry.session !== session || entry.deadline < this.now()) return 'not_found';
    this.settleOne(inputId, { by: 'answer', answer });
    return 'answered';
  }

  async pending(session: string): Promise<ParkedInput[]> {
    return this.live(session).sort(byParkOrder);
  }

  async close(): Promise<void> {
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w({ by: 'released' });
  }

  /** Ends one parked call with `settlement` unless it ended before; what holds, told to its waiters. */
  private settleOne(inputId: string, settlement: InputSettlement): InputSettlement {
    if (this.parked.delete(inputId)) this.settled.set(inputId, { settlement, at: this.now() });
    const held = this.settled.get(inputId)?.settlement ?? settlement;
    for (const w of [...(this.waiters.get(inputId) ?? [])]) w(held);
    return held;
  }

  private live(session: string): ParkedInput[] {
    const now = this.now();
    return [...this.parked.values()].filter((i) => i.session === session && i.deadline >= now);
  }

  private prune(): void {
    const before = this.now() - SETTLED_KEEP_MS;
    for (const [id, s] of this.settled) if (s.at < before) this.settled.delete(id);
  }
}
