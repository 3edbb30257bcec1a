import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ExecJob, type ExecOutcome, type Executor, resolveConfig } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { until } from '../../../../test/support/until.js';
import { MemoryConfirmHub } from '../confirm/memory.js';
import { Engine, MAX_ROUND_RETRIES } from '../engine.js';
import type { DispatchEvent } from '../events/event-bus.js';
import { MemoryEventBus } from '../events/memory.js';
import { sleep } from '../executors/fake.js';
import { MemoryInputHub } from '../inputs/memory.js';
import { MemoryLedger } from '../ledger/memory.js';
import { MemoryLimits } from '../limits/memory.js';
import { MemoryStore } from '../store/memory.js';

/**
 * The queue as coordinators see it: a call (round, index) runs once however many coordinators
 * wait for it, and each gets its outcome (as BullMQ job ids and outcome keys give in Redis).
 */
class OnceExecutor implements Executor {
  readonly runs: ExecJob[] = [];
  readonly origins: (string | undefined)[] = [];
  private readonly calls = new Map<string, Promise<ExecOutcome>>();
  release: () => void = () => {};
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  execute(job: ExecJob): Promise<ExecOutcome> {
    this.origins.push(job.origin);
    const key = `${job.round}|${job.callIndex}`;
    let outcome = this.calls.get(key);
    if (!outcome) {
      this.runs.push(job);
      outcome = this.gate.then(
        (): ExecOutcome => ({ status: 'ok', output: { value: job.args.expression }, durationMs: 1, ranOn: 'w' }),
      );
      this.calls.set(key, outcome);
    }
    return outcome;
  }

  /** The handlers live workers announce (none while their announcements lapsed, Redis away). */
  handlers: ReadonlySet<string> = new Set(['calculate', 'run_command']);
  async handlerNames(): Promise<ReadonlySet<string>> {
    return this.handlers;
  }

  /** What coordinators said they committed: round, call indexes, origin. */
  readonly committedCalls: [string, readonly number[], string | undefined][] = [];
  committed(round: string, callIndexes: readonly number[], origin?: string): void {
    this.committedCalls.push([round, callIndexes, origin]);
  }

  async close(): Promise<void> {}
}

/**
 * A MemoryStore whose next `failCommits` commits throw, as when Redis is away, and whose next
 * `loseBeginReplies` beginRounds are stored and then throw (Redis ran it; the reply was lost).
 */
class FlakyStore extends MemoryStore {
  failCommits = 0;
  loseBeginReplies = 0;
  override async beginRound(input: Parameters<MemoryStore['beginRound']>[0]) {
    const begun = await super.beginRound(input);
    if (this.loseBeginReplies > 0) {
      this.loseBeginReplies--;
      throw new Error('Reached the max retries per request limit (which is 3).');
    }
    return begun;
  }
  override async commitRound(input: Parameters<MemoryStore['commitRound']>[0]) {
    if (this.failCommits > 0) {
      this.failCommits--;
      throw new Error('Connection is closed.');
    }
    return super.commitRound(input);
  }
}

async function twoCoordinators(options: { autoApprove?: 'all'; onError?: (e: Error) => void } = {}) {
  const store = new FlakyStore();
  const events = new MemoryEventBus();
  const ledger = new MemoryLedger();
  const executor = new OnceExecutor();
  const config = resolveConfig({ workspaceRoot: mkdtempSync(path.join(tmpdir(), 'td-takeover-')) }, {});
  const engine = (id: string) =>
    new Engine({
      config,
      executor,
      store,
      events,
      confirmations: new MemoryConfirmHub(),
      inputs: new MemoryInputHub(),
      limits: new MemoryLimits(),
      ledger,
      coordinatorId: id,
      leaseMs: 60,
      ...(options.onError ? { onError: options.onError } : {}),
    });
  const a = engine('coord-a');
  const b = engine('coord-b');
  await a.putSession('s1', { provider: 'claude-code', ...(options.autoApprove ? { autoApprove: 'all' } : {}) });
  // The schemas shown once, so the rounds below run their calls.
  const fetched = await a.submitRound({
    session: 's1',
    run: 'setup',
    calls: [{ id: 'f', name: 'find_tools', args: { names: ['calculate', 'run_command'] } }],
  });
  expect(fetched.results[0]?.status).toBe('ok');
  const seen: DispatchEvent[] = [];
  await events.subscribe('s1', undefined, (e) => seen.push(e));
  return { store, ledger, executor, a, b, seen };
}

/**
 * Coordinator a, recovering every 20 ms, submits a round under an Idempotency-Key whose commit
 * fails (`failCommits` times, as with Redis away): the submit rejects; `retry` submits it again.
 */
async function roundFailingItsCommits(failCommits: number, onError?: (e: Error) => void) {
  const setup = await twoCoordinators(onError ? { onError } : {});
  const { store, executor, a } = setup;
  await a.startRecovery(20);
  store.failCommits = failCommits;
  executor.release();
  const round = {
    session: 's1',
    run: 'r1',
    calls: [{ id: 'c1', name: 'calculate', args: { expression: '3' } }],
    idempotencyKey: 'k-1',
  };
  await expect(a.submitRound(round)).rejects.toThrow(/Connection is closed/);
  return { ...setup, retry: () => a.submitRound(round) };
}

describe('a round whose coordinator stops renewing its lease', () => {
  it('is finished by another coordinator; the call runs once, is committed once, and the first is fenced', async () => {
    const { store, ledger, executor, a, b, seen } = await twoCoordinators();
    // a heartbeats once (as a dying coordinator did) and never again: its lease lapses after 60 ms.
    await ledger.heartbeat('coord-a', 60, []);
    const calls = [{ id: 'c1', name: 'calculate', args: { expression: '2+2' } }];
    const fromA = a.submitRound({ session: 's1', run: 'r1', calls });
    await until(() => executor.runs.length === 1, { what: 'executor.runs.length === 1' });
    await b.startRecovery(20);
    // b adopts a's round and waits on the same call (origin: a, whose name holds its outcome).
    await until(() => executor.origins.includes('coord-a'), { what: "executor.origins.includes('coord-a')" });
    executor.release();
    const answer = await fromA;
    expect(answer.results).toMatchObject([{ id: 'c1', status: 'ok', output: { value: '2+2' } }]);
    expect(executor.runs).toHaveLength(1);
    await until(async () => (await store.getRound('s1', 'r1', answer.round))?.state === 'done', {
      what: "(await store.getRound('s1', 'r1', answer.round))?.state === 'done'",
    });
    expect((await store.history('s1')).map((e) => e.id)).toEqual(['f', 'c1']);
    expect(seen.filter((e) => e.name === 'round.completed')).toHaveLength(1);
    expect(seen.filter((e) => e.name === 'tool.result')).toHaveLength(1);
    // Only the committing coordinator lets the outcomes go, named under a's namespace.
    expect(executor.committedCalls.filter(([round]) => round === answer.round)).toEqual([
      [answer.round, [0], 'coord-a'],
    ]);
    await a.close();
    await b.close();
  });

  it('keeps a person’s answers: the coordinator taking over does not ask again', async () => {
    const { ledger, executor, a, b } = await twoCoordinators();
    await ledger.heartbeat('coord-a', 60, []);
    const calls = [{ id: 'c1', name: 'run_command', args: { command: 'echo hi' } }];
    const fromA = a.submitRound({ session: 's1', run: 'r1', calls });
    await until(async () => (await a.pendingConfirmations('s1')).length === 1, {
      what: "(await a.pendingConfirmations('s1')).length === 1",
    });
    await a.answerConfirmation('s1', 'c1', { approve: true, remember: false });
    await until(() => executor.runs.length === 1, { what: 'executor.runs.length === 1' });
    await b.startRecovery(20);
    await until(() => executor.origins.includes('coord-a'), { what: "executor.origins.includes('coord-a')" });
    expect(await b.pendingConfirmations('s1')).toEqual([]);
    executor.release();
    expect((await fromA).results).toMatchObject([{ id: 'c1', status: 'ok' }]);
    expect(executor.runs).toHaveLength(1);
    await a.close();
    await b.close();
  });

  it('is finished later by its own coordinator when it failed part way, and a retry under its key gets the answer', async () => {
    const { store, executor, a, retry } = await roundFailingItsCommits(1);
    // The retry waits for the round, which the recovery timer resumes and commits.
    const retried = await retry();
    expect(retried.results).toMatchObject([{ id: 'c1', status: 'ok', output: { value: '3' } }]);
    expect(executor.runs).toHaveLength(1);
    expect((await store.history('s1')).map((e) => e.id)).toEqual(['f', 'c1']);
    await a.close();
  });

  it('is run by its own coordinator when its beginning was stored but the reply lost, and a retry under its key gets the answer', async () => {
    const { store, executor, a, b } = await twoCoordinators();
    await a.startRecovery(20);
    await b.startRecovery(20);
    executor.release();
    const round = {
      session: 's1',
      run: 'r1',
      calls: [{ id: 'c1', name: 'calculate', args: { expression: '7' } }],
      idempotencyKey: 'k-lost',
    };
    store.loseBeginReplies = 1;
    await expect(a.submitRound(round)).rejects.toThrow(/max retries/);
    // The client retries on the other coordinator: the key is held by a's round, which a resumes.
    const retried = await Promise.race([
      b.submitRound(round),
      sleep(2_000).then(() => 'still waiting for a round nobody runs' as const),
    ]);
    expect(retried).toMatchObject({ results: [{ id: 'c1', status: 'ok', output: { value: '7' } }] });
    expect(executor.runs).toHaveLength(1);
    expect((await store.history('s1')).map((e) => e.id)).toEqual(['f', 'c1']);
    await a.close();
    await b.close();
  });

  it('answers a resumed call with its recorded outcome, not unknown, while no worker is announced', async () => {
    const setup = await twoCoordinators();
    const { store, executor, a } = setup;
    await a.startRecovery(20);
    executor.release();
    const round = {
      session: 's1',
      run: 'r1',
      calls: [{ id: 'c1', name: 'calculate', args: { expression: '5' } }],
      idempotencyKey: 'k-5',
    };
    store.failCommits = 1;
    // The call runs, the commit fails (Redis away), and the workers' announcements lapse meanwhile.
    const first = expect(a.submitRound(round)).rejects.toThrow(/Connection is closed/);
    await until(() => executor.runs.length === 1, { what: 'executor.runs.length === 1' });
    executor.handlers = new Set();
    await first;
    const retried = await a.submitRound(round);
    expect(retried.results).toMatchObject([{ id: 'c1', status: 'ok', output: { value: '5' } }]);
    expect(executor.runs).toHaveLength(1);
    await a.close();
  });

  it('is given up after its retries: a retry under its key hears round_failed instead of waiting', async () => {
    const errors: string[] = [];
    const { executor, a, retry } = await roundFailingItsCommits(1_000, (e) => errors.push(e.message));
    await expect(retry()).rejects.toMatchObject({
      code: 'round_failed',
      message: expect.stringMatching(/outcome .* unknown/),
    });
    expect(errors.filter((m) => m.includes('given up'))).toHaveLength(1);
    expect(errors.filter((m) => m.includes('Connection is closed'))).toHaveLength(MAX_ROUND_RETRIES);
    expect(executor.runs).toHaveLength(1);
    await a.close();
  });

  it('is not taken over while its coordinator keeps renewing', async () => {
    const { executor, a, b } = await twoCoordinators();
    await a.startRecovery(20);
    await b.startRecovery(20);
    const fromA = a.submitRound({
      session: 's1',
      run: 'r1',
      calls: [{ id: 'c1', name: 'calculate', args: { expression: '1' } }],
    });
    await sleep(300);
    expect(executor.origins).toEqual([undefined]);
    executor.release();
    expect((await fromA).results).toMatchObject([{ status: 'ok' }]);
    await a.close();
    await b.close();
  });
});
