import fc from 'fast-check';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import type { SessionState } from '../model.js';
import { RedisStore } from '../store/redis.js';
import { type LimitRelease, type LimitStage, type RunPlace, runStages, runTicketOf } from './limits.js';
import { RedisLimits } from './redis.js';

// DESIGN.md pass 2 across coordinators: whatever the interleaving of rounds of one run on two
// coordinators, cancels of the run and coordinators killed (SIGKILL: no release goes out), a run
// never has more than MAX_CONCURRENT_TOOLS calls in flight nor two serial calls at once, and
// every call of a live coordinator is granted or cancelled in the end (nothing stays blocked).
// (v1.3) Some rounds take their places in their begin step (RedisStore.beginRound, when free and
// none wait) and give back what is left in their commit step, as the engine does.

const MAX = 5;
const LEASE_MS = 300;
const ref = { session: 's1', run: 'r1' };

let url = '';
useRedis((server) => {
  url = server.url;
});

type Op =
  | { kind: 'round'; on: 0 | 1; begun: boolean; calls: { place: RunPlace; holdMs: number }[] }
  | { kind: 'cancel' }
  | { kind: 'kill'; which: 0 | 1 }
  | { kind: 'pause'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('round' as const),
      on: fc.constantFrom(0 as const, 1 as const),
      begun: fc.boolean(),
      calls: fc.array(
        fc.record({
          place: fc.constantFrom<RunPlace>('concurrent', 'concurrent', 'serial'),
          holdMs: fc.integer({ min: 0, max: 25 }),
        }),
        { minLength: 1, maxLength: 8 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('kill' as const), which: fc.constantFrom(0 as const, 1 as const) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 30 }) }) },
);

/** One coordinator: its connection and limits, and the calls it holds places for (gone with it when killed). */
interface Coordinator {
  redis: Redis;
  limits: RedisLimits;
  store: RedisStore;
  alive: boolean;
  /** The places of its calls in flight. */
  running: Set<{ place: RunPlace }>;
}

/** The run's calls in flight on live coordinators, checked against both rules at every grant. */
class Probe {
  inFlight = 0;
  serialInFlight = 0;
  maxSeen = 0;
  maxSerialSeen = 0;
  start(place: RunPlace): void {
    this.inFlight++;
    if (place === 'serial') this.serialInFlight++;
    this.maxSeen = Math.max(this.maxSeen, this.inFlight);
    this.maxSerialSeen = Math.max(this.maxSerialSeen, this.serialInFlight);
  }
  end(place: RunPlace): void {
    this.inFlight--;
    if (place === 'serial') this.serialInFlight--;
  }
}

async function play(prefix: string, ops: readonly Op[]): Promise<Probe> {
  const probe = new Probe();
  const spawn = (): Coordinator => {
    const redis = new Redis(url);
    const limits = new RedisLimits({ redis, prefix, leaseMs: LEASE_MS });
    return { redis, limits, store: new RedisStore({ redis, prefix }), alive: true, running: new Set() };
  };
  let rounds = 0;
  const coordinators = [spawn(), spawn()];
  await coordinators[0]?.store.putSession(sessionOf(ref.session));
  let run = new AbortController();
  const calls: Promise<void>[] = [];
  const oneCall = async (c: Coordinator, place: RunPlace, holdMs: number, signal: AbortSignal, ticket: string) => {
    let release: LimitRelease;
    try {
      const stages = runStages(ref, place, MAX);
      release = c.limits.tryAcquire(stages, ticket) ?? (await c.limits.acquire(stages, signal, undefined, ticket));
    } catch {
      return; // cancelled, or its coordinator died while it waited
    }
    if (!c.alive) return; // granted as it died: the call never started
    const call = { place };
    c.running.add(call);
    probe.start(place);
    await new Promise((r) => setTimeout(r, holdMs));
    if (!c.alive) return; // counted out when its coordinator was killed
    c.running.delete(call);
    probe.end(place);
    release();
  };
  /** A round's pass 2: consecutive concurrent calls as one batch, each serial call alone. */
  const oneRound = async (c: Coordinator, round: Extract<Op, { kind: 'round' }>, signal: AbortSignal) => {
    const id = `rnd_${rounds++}`;
    // A begin cut short by its coordinator's death: its calls then find the coordinator gone.
    const begun = round.begun ? await begin(c, id, round.calls.length).catch(() => false) : false;
    let batch: Promise<void>[] = [];
    for (const [i, call] of round.calls.entries()) {
      if (call.place === 'concurrent') {
        batch.push(oneCall(c, 'concurrent', call.holdMs, signal, runTicketOf(id, i)));
        continue;
      }
      await Promise.all(batch);
      batch = [];
      await oneCall(c, 'serial', call.holdMs, signal, runTicketOf(id, i));
    }
    await Promise.all(batch);
    if (begun && c.alive) await commit(c, id).catch(() => c.limits.roundEnded(id));
  };
  for (const op of ops) {
    if (op.kind === 'pause') await new Promise((r) => setTimeout(r, op.ms));
    else if (op.kind === 'cancel') {
      run.abort(new Error('run cancelled'));
      run = new AbortController();
    } else if (op.kind === 'kill') {
      const dead = coordinators[op.which] as Coordinator;
      dead.alive = false;
      // Its calls die with it: they leave the run's count now, their places only when the lease lapses.
      for (const call of dead.running) probe.end(call.place);
      dead.running.clear();
      await dead.limits.close();
      dead.redis.disconnect(); // SIGKILL: whatever it held lapses with its lease
      coordinators[op.which] = spawn();
    } else {
      const c = coordinators[op.on] as Coordinator;
      calls.push(oneRound(c, op, run.signal));
    }
  }
  // Nothing stays blocked: every call is granted or cancelled within a few leases of the last op.
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('a call of the run stayed blocked')), 30_000);
  });
  await Promise.race([Promise.all(calls), stuck]).finally(() => clearTimeout(timer));
  for (const c of coordinators) {
    await c.limits.close();
    c.redis.disconnect();
  }
  return probe;
}

/** Rounds whose begin took their places, over every run of the property (it must not be vacuous). */
let placesTakenAtBegin = 0;

/** The round's begin step with its places (RedisStore.beginRound): true when it took them. */
async function begin(c: Coordinator, round: string, calls: number): Promise<boolean> {
  const tickets = Array.from({ length: calls }, (_, i) => runTicketOf(round, i));
  const places = c.limits.askAtBegin(runStages(ref, 'concurrent', MAX)[0] as LimitStage, tickets);
  if (!places) return false;
  const begun = await c.store.beginRound({ ...ref, round, idempotencyKey: undefined, callsHash: '', places });
  if (begun.kind !== 'new' || !begun.placesTaken || !c.alive) return false;
  c.limits.took(round, places);
  placesTakenAtBegin++;
  return true;
}

/** The round's commit step, giving back the places its calls did not. */
async function commit(c: Coordinator, round: string): Promise<void> {
  const giveBack = c.limits.giveBackAtCommit(round);
  const out = await c.store.commitRound({
    ...ref,
    tenant: 'default',
    round,
    items: [],
    ...(giveBack ? { giveBack } : {}),
  });
  c.limits.roundEnded(round, out.waiters === undefined ? undefined : { waiters: out.waiters });
}

function sessionOf(id: string): SessionState {
  const at = 1_700_000_000_000;
  const base = { provider: 'openai' as const, tenant: 'default', autoApprove: [], clientTools: [], fetched: [] };
  return { id, ...base, loaded: ['find_tools', 'run_tool'], workspace: `/tmp/ws/${id}`, createdAt: at, updatedAt: at };
}

it('holds both rules of a run across two coordinators through rounds, cancels and kills', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 24 }), async (ops) => {
      const probe = await play(randomPrefix(), ops);
      expect(probe.maxSeen).toBeLessThanOrEqual(MAX);
      expect(probe.maxSerialSeen).toBeLessThanOrEqual(1);
    }),
    { numRuns: 25, interruptAfterTimeLimit: 150_000 },
  );
  expect(placesTakenAtBegin).toBeGreaterThan(0);
}, 200_000);
