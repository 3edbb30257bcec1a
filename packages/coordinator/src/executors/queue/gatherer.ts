import { type Gathering, gatheringKeyOf, newGathering, type Pending } from './pending.js';

/**
 * Calls gathered into jobs: a call joins the job of its gathering key (gatheringKeyOf), sent once
 * every call admitted in this tick has joined, so the concurrent calls of the rounds admitted
 * together (each run's limit already applied) share one job, up to TD_JOB_CALLS. While the job
 * before it under the same key is still being added (its markCarried and BullMQ add, one round
 * trip), a job waits for that add to end and gathers the calls admitted meanwhile: under load more
 * rounds share a job (fewer Redis commands a call: BullMQ's three scripts, markCarried and the
 * worker's report go per job), and a call waits at most one add's round trip longer; with nothing
 * in flight (one session, a quiet coordinator) a job goes at the end of its tick as before.
 */
export class Gatherer {
  private readonly open = new Map<string, Gathering>();
  /** The add under way per gathering key, settled either way. */
  private readonly adding = new Map<string, Promise<void>>();

  constructor(
    private readonly jobCalls: number,
    private readonly send: (calls: readonly Pending[]) => Promise<void>,
  ) {}

  /** Adds a call to its job; settles once that job is added (or its add failed). */
  gather(entry: Pending): Promise<void> {
    const key = gatheringKeyOf(entry, this.jobCalls);
    let gathering = this.open.get(key);
    if (!gathering) {
      const ready = newGathering();
      gathering = ready;
      this.open.set(key, ready);
      // After the microtasks of this tick: every call the run's limiter admitted with this one has joined.
      process.nextTick(() => {
        const before = this.adding.get(key);
        if (before) before.then(() => this.sendNow(key, ready));
        else this.sendNow(key, ready);
      });
    }
    gathering.calls.push(entry);
    // Full: the next call starts another job (this one still goes as planned).
    if (gathering.calls.length >= this.jobCalls && this.open.get(key) === gathering) this.open.delete(key);
    return gathering.enqueued;
  }

  private sendNow(key: string, ready: Gathering): void {
    if (this.open.get(key) === ready) this.open.delete(key);
    const sending = this.send(ready.calls);
    const settled = sending.then(
      () => undefined,
      () => undefined,
    );
    this.adding.set(key, settled);
    settled.then(() => {
      if (this.adding.get(key) === settled) this.adding.delete(key);
    });
    sending.then(ready.resolve, ready.reject);
  }
}
