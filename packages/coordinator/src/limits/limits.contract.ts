import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../../../test/support/until.js';
import type { LimitRelease, LimitStage, Limits, LimitWait } from './limits.js';
import { runStages } from './limits.js';

/** What one contract test works on: limits, and a peer (another coordinator's view of the same store; the limits themselves where there is one process). */
export interface LimitsFixture {
  limits: Limits;
  peer: Limits;
  cleanup(): Promise<void>;
}

const settle = () => new Promise((r) => setTimeout(r, 30));
/** Places now when free at once (the fast path), else a wait (as pass 2 asks). */
function take(limits: Limits, stages: LimitStage[], signal?: AbortSignal, onWait?: (w: LimitWait) => void) {
  return Promise.resolve(limits.tryAcquire(stages) ?? limits.acquire(stages, signal, onWait));
}

const ref = { session: 's1', run: 'r1' };
const concurrent = (max = 5) => runStages(ref, 'concurrent', max);
const serial = (max = 5) => runStages(ref, 'serial', max);

/**
 * The rules every Limits keeps (STYLE.md: one shared suite, run against each implementation).
 * `make` gives fresh, empty limits for each test.
 */
export function describeLimitsContract(name: string, make: () => Promise<LimitsFixture>): void {
  describe(`Limits contract: ${name}`, () => {
    let f: LimitsFixture;
    beforeEach(async () => {
      f = await make();
    });
    afterEach(async () => {
      await f.cleanup();
    });

    it('grants at most `concurrency` places at once across both views, the waiters in arrival order', async () => {
      const held = await Promise.all([0, 1, 2].map((i) => take(i % 2 ? f.peer : f.limits, concurrent(3))));
      const order: number[] = [];
      const waiting: Promise<LimitRelease>[] = [];
      for (const n of [3, 4, 5, 6]) {
        waiting.push(
          take(n % 2 ? f.peer : f.limits, concurrent(3)).then((r) => {
            order.push(n);
            return r;
          }),
        );
        await settle(); // arrival order is the order the store heard them in
      }
      expect(order).toEqual([]);
      held[0]?.();
      await until(() => order.length === 1, { what: 'the first waiter' });
      expect(order).toEqual([3]);
      held[1]?.();
      await until(() => order.length === 2, { what: 'the second waiter' });
      held[2]?.();
      await until(() => order.length === 3, { what: 'the third waiter' });
      expect(order).toEqual([3, 4, 5]);
      (await waiting[0])?.();
      await until(() => order.length === 4, { what: 'the last waiter' });
      expect(order).toEqual([3, 4, 5, 6]);
      for (const w of waiting.slice(1)) (await w)();
    });

    it('lets one serial call of a run hold the lane at a time, in order, across both views', async () => {
      const first = await take(f.limits, serial());
      const order: string[] = [];
      const second = take(f.peer, serial()).then((r) => {
        order.push('second');
        return r;
      });
      await settle();
      const third = take(f.limits, serial()).then((r) => {
        order.push('third');
        return r;
      });
      await settle();
      // A concurrent call of the run is not behind the lane.
      (await take(f.peer, concurrent()))();
      expect(order).toEqual([]);
      first();
      await until(() => order.length === 1, { what: 'the second serial call' });
      expect(order).toEqual(['second']);
      (await second)();
      await until(() => order.length === 2, { what: 'the third serial call' });
      (await third)();
    });

    it('holds none of the run’s places while a serial call waits for the lane', async () => {
      const lane = await take(f.limits, serial(2));
      let granted = false;
      const next = take(f.peer, serial(2)).then((r) => {
        granted = true;
        return r;
      });
      await settle();
      // The run's second place is free for a concurrent call while the second serial call waits.
      const other = await take(f.peer, concurrent(2));
      expect(granted).toBe(false);
      other();
      lane();
      (await next)();
    });

    it('drops a cancelled waiter at once, gives back what it held, and grants the one behind it', async () => {
      const busy = await take(f.limits, concurrent(1));
      const run = new AbortController();
      const cancelled = take(f.peer, serial(1), run.signal);
      await settle();
      let behind = false;
      const next = take(f.limits, concurrent(1)).then((r) => {
        behind = true;
        return r;
      });
      await settle();
      run.abort(new Error('run cancelled'));
      await expect(cancelled).rejects.toThrow('run cancelled');
      busy();
      await until(() => behind, { what: 'the waiter behind the cancelled one' });
      (await next)();
      // The lane the cancelled call held while it waited for a place is free again.
      (await take(f.peer, serial(1)))();
    });

    it('refuses a wait whose signal is aborted already', async () => {
      const busy = await take(f.limits, concurrent(1));
      await expect(f.peer.acquire(concurrent(1), AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
      busy();
      (await take(f.peer, concurrent(1)))();
    });

    it('tells of each wait with its reason, and of none when the places were free', async () => {
      const waits: LimitWait[] = [];
      (await f.limits.acquire(serial(1), undefined, (w) => waits.push(w)))();
      expect(waits).toEqual([]);
      const lane = await take(f.limits, serial(1));
      const next = f.peer.acquire(serial(1), undefined, (w) => waits.push(w));
      await settle();
      lane();
      (await next)();
      expect(waits.map((w) => w.reason)).toEqual(['serial_lane']);
      expect(waits[0]?.endMs).toBeGreaterThanOrEqual(waits[0]?.startMs ?? Number.NaN);
    });

    it('keeps runs, sessions and scopes apart', async () => {
      const a = await take(f.limits, concurrent(1));
      const otherRun = await take(f.peer, runStages({ session: 's1', run: 'r2' }, 'serial', 1));
      const otherSession = await take(f.peer, runStages({ session: 's2', run: 'r1' }, 'serial', 1));
      const tenant: LimitStage = { scope: { tenant: 't1' }, name: 'run:r1', concurrency: 1, reason: 'run_limit' };
      const inTenant = await take(f.peer, [tenant]);
      for (const r of [a, otherRun, otherSession, inTenant]) r();
    });

    it('lets a release be called twice without freeing a place twice', async () => {
      const first = await take(f.limits, concurrent(1));
      first();
      first();
      const a = await take(f.peer, concurrent(1));
      let second = false;
      const b = take(f.limits, concurrent(1)).then((r) => {
        second = true;
        return r;
      });
      await settle();
      first();
      await settle();
      expect(second).toBe(false);
      a();
      (await b)();
    });

    it('starts at most `rate.count` calls in any window of a rate limit, across both views', async () => {
      const name = `tool:rated-${Math.random().toString(36).slice(2, 8)}`;
      const stage: LimitStage = {
        scope: { limit: name },
        name,
        concurrency: 1_000_000,
        reason: 'named_limit',
        rate: { count: 3, windowMs: 1000 },
      };
      // Both views' connections and scripts warmed first, so the arrival order below is the order
      // the asks reach the store (a cold cluster connection can take longer than the 20 ms between them).
      const warm: LimitStage = {
        scope: { limit: `${name}-warm` },
        name: `${name}-warm`,
        concurrency: 2,
        reason: 'named_limit',
      };
      for (const view of [f.limits, f.peer]) (await take(view, [warm]))();
      const starts: { n: number; at: number }[] = [];
      const all = [0, 1, 2, 3, 4, 5, 6].map(async (n) => {
        await new Promise((r) => setTimeout(r, n * 20)); // arrival order
        const release = await take(n % 2 ? f.peer : f.limits, [stage]);
        starts.push({ n, at: Date.now() });
        release(); // a rate counts starts, not calls in flight
      });
      await Promise.all(all);
      // The first three at once; the rest as the window moves (a waiter's turn is kept, though with
      // two coordinators the one behind it may be told first when the window has room for both).
      expect(starts.slice(0, 3).map((s) => s.n)).toEqual([0, 1, 2]);
      expect(starts.map((s) => s.n).sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect((starts[3]?.at ?? 0) - (starts[0]?.at ?? 0)).toBeGreaterThanOrEqual(990);
      // Sliding window: never more than 3 starts within any 1000 ms (a little slack for the clock's ms).
      for (const [i, s] of starts.entries()) {
        const within = starts.slice(i).filter((t) => t.at - s.at < 990);
        expect(within.length, `starts from ${s.n}`).toBeLessThanOrEqual(3);
      }
    });

    it('ends a rate wait at once when its signal aborts', async () => {
      const name = `tool:rated-${Math.random().toString(36).slice(2, 8)}`;
      const stage: LimitStage = {
        scope: { limit: name },
        name,
        concurrency: 10,
        reason: 'named_limit',
        rate: { count: 1, windowMs: 60_000 },
      };
      (await take(f.limits, [stage]))();
      const stop = new AbortController();
      const waiting = take(f.peer, [stage], stop.signal);
      await settle();
      stop.abort(new Error('maxWaitMs'));
      await expect(waiting).rejects.toThrow('maxWaitMs');
    });

    it('reads the places held, a full rate window’s next token and how long its places were held (peek)', async () => {
      const name = `tool:peeked-${Math.random().toString(36).slice(2, 8)}`;
      const stage: LimitStage = {
        scope: { limit: name },
        name,
        concurrency: 2,
        reason: 'named_limit',
        rate: { count: 2, windowMs: 1000 },
      };
      expect(await f.peer.peek([stage])).toEqual([{ held: 0, nextTokenMs: 0, meanHoldMs: undefined }]);
      const first = await take(f.limits, [stage]);
      const grantedAt = Date.now();
      const second = await take(f.limits, [stage]);
      const [full] = await f.peer.peek([stage]);
      expect(full?.held).toBe(2);
      // The window's oldest grant leaves it about a second after it was made.
      expect(full?.nextTokenMs).toBeGreaterThan(0);
      expect(full?.nextTokenMs).toBeLessThanOrEqual(1001 - (Date.now() - grantedAt) + 50);
      await new Promise((r) => setTimeout(r, 200));
      first();
      second();
      await settle();
      const [after] = await f.limits.peek([stage]);
      expect(after?.held).toBe(0);
      // This view held both places about 200 ms; the window is still full until its grants leave it.
      expect(after?.meanHoldMs).toBeGreaterThanOrEqual(190);
      expect(after?.meanHoldMs).toBeLessThan(1000);
      expect(after?.nextTokenMs).toBeGreaterThan(0);
    });
  });
}
