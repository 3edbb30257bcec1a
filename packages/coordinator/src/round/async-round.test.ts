import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ExecJob, resolveConfig, type ToolDefinition } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { until } from '../../../../test/support/until.js';
import { MemoryConfirmHub } from '../confirm/memory.js';
import { Engine } from '../engine.js';
import type { DispatchEvent } from '../events/event-bus.js';
import { MemoryEventBus } from '../events/memory.js';
import { LocalExecutor } from '../executors/local.js';
import { MemoryInputHub } from '../inputs/memory.js';
import { MemoryLimits } from '../limits/memory.js';
import type { RoundView } from '../model.js';
import { MemoryStore } from '../store/memory.js';

// API.md v1.3 "Rounds that outlive their request" through the engine (embedded seams): a round
// handed over at once, its view while it runs, its stored answer after, the wait woken by its commit.
let seq = 0;
const LOOKUP: ToolDefinition = { name: 'ui_lookup', description: 'Look up.', parameters: { type: 'object' } };

/** A run_command handler held until `release()` (then open for good); its jobs as they started. */
function gatedExecutor() {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const started: ExecJob[] = [];
  const executor = new LocalExecutor({
    names: () => ['run_command', 'calculate'],
    run: async (job, signal) => {
      started.push(job);
      if (job.name === 'run_command')
        await Promise.race([gate, new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
      if (signal.aborted)
        return { status: 'error', code: 'cancelled', message: 'cancelled', durationMs: 1, ranOn: 'embedded' };
      return {
        status: 'ok',
        output: { exitCode: 0, stdout: String(job.args.command), stderr: '' },
        durationMs: 1,
        ranOn: 'embedded',
      };
    },
  });
  const release = () => open();
  return { executor, started, release };
}

async function setup(opts: { autoApprove?: 'all'; now?: () => number; retentionMs?: number } = {}) {
  const { executor, started, release } = gatedExecutor();
  const config = resolveConfig({ workspaceRoot: mkdtempSync(path.join(tmpdir(), 'td-async-')) }, {});
  const store = new MemoryStore({
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.retentionMs ? { roundRetentionMs: opts.retentionMs } : {}),
  });
  const events = new MemoryEventBus();
  const engine = new Engine({
    config,
    executor,
    callProgress: executor,
    store,
    events,
    confirmations: new MemoryConfirmHub(),
    inputs: new MemoryInputHub(),
    limits: new MemoryLimits(),
  });
  const session = `s${++seq}`;
  await engine.putSession(session, {
    provider: 'claude-code',
    ...(opts.autoApprove ? { autoApprove: opts.autoApprove } : {}),
    clientTools: [LOOKUP],
  });
  const names = ['run_command', 'calculate', 'ui_lookup'];
  await engine.submitRound({ session, run: 'setup', calls: [{ id: 'f', name: 'find_tools', args: { names } }] });
  const seen: string[] = [];
  await engine.subscribe(session, undefined, (e: DispatchEvent) => seen.push(`${e.name}:${String(e.data.round)}`));
  /** Reads the round until `ok` says so (the states change as the round goes on). */
  const untilRound = async (run: string, round: string, ok: (v: RoundView | null) => boolean) => {
    let last: RoundView | null = null;
    const held = await until(
      async () => {
        last = await engine.getRound(session, run, round);
        return ok(last) ? { view: last } : undefined;
      },
      { what: () => `round ${round} to get there (last: ${JSON.stringify(last)})`, intervalMs: 5 },
    );
    return held.view;
  };
  return { engine, store, session, started, release, seen, until: untilRound };
}

const cmd = (id: string, command: string) => ({ id, name: 'run_command', args: { command } });

describe('async rounds (Dispatcher.submitRoundAsync / getRound / cancelRound)', () => {
  it('answers running at once; the round goes on, and getRound then serves the answer a waiting retry gets', async () => {
    const { engine, session, started, release, until } = await setup({ autoApprove: 'all' });
    const calls = [cmd('c1', 'sleep 1'), { id: 'c2', name: 'calculate', args: { expression: '1+1' } }];
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls, idempotencyKey: 'k1' });
    if (reply.status !== 'running') throw new Error(`expected running, got ${JSON.stringify(reply)}`);
    expect(reply.run).toBe('r1');
    const running = await until('r1', reply.round, (v) => v?.status === 'running' && v.calls[0]?.state === 'running');
    expect(running).toMatchObject({ status: 'running', round: reply.round, run: 'r1' });
    if (running?.status !== 'running') throw new Error('unreachable');
    expect(running.calls.map((c) => [c.id, c.name])).toEqual([
      ['c1', 'run_command'],
      ['c2', 'calculate'],
    ]);
    expect(started.map((j) => j.name)).toContain('run_command');
    // A retry under the key while it runs: the same round, still running, nothing started again.
    expect(await engine.submitRoundAsync({ session, run: 'r1', calls, idempotencyKey: 'k1' })).toEqual(reply);
    release();
    const done = await until('r1', reply.round, (v) => v?.status === 'done');
    if (done?.status !== 'done') throw new Error('unreachable');
    expect(done.response.round).toBe(reply.round);
    expect(done.response.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    // The waiting form under the same key, and an async retry, both get the stored answer.
    expect(await engine.submitRound({ session, run: 'r1', calls, idempotencyKey: 'k1' })).toEqual(done.response);
    expect(await engine.submitRoundAsync({ session, run: 'r1', calls, idempotencyKey: 'k1' })).toEqual(done);
    expect(await engine.getRound(session, 'r1', reply.round)).toEqual(done);
    expect(started.filter((j) => j.name === 'run_command')).toHaveLength(1);
  });

  it('holds a wait until the round commits, woken by its round.completed', async () => {
    const { engine, session, release, seen, until } = await setup({ autoApprove: 'all' });
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls: [cmd('c1', 'long')] });
    if (reply.status !== 'running') throw new Error('expected running');
    await until('r1', reply.round, (v) => v?.status === 'running' && v.calls[0]?.state === 'running');
    // A minute's wait: only the commit ends it within the test's time.
    const waited = engine.getRound(session, 'r1', reply.round, { waitMs: 60_000 }).then((v) => {
      seen.push(`get:${v?.status}`);
      return v;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).not.toContain('get:done');
    release();
    const v = await waited;
    expect(v?.status).toBe('done');
    expect(seen.indexOf(`round.completed:${reply.round}`)).toBeGreaterThanOrEqual(0);
    expect(seen.indexOf('get:done')).toBeGreaterThan(seen.indexOf(`round.completed:${reply.round}`));
  });

  it('reads the store once before a wait and once when the commit wakes it, never in between (no polling)', async () => {
    const { engine, store, session, release, until } = await setup({ autoApprove: 'all' });
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls: [cmd('c1', 'long')] });
    if (reply.status !== 'running') throw new Error('expected running');
    await until('r1', reply.round, (v) => v?.status === 'running' && v.calls[0]?.state === 'running');
    let reads = 0;
    const read = store.getRound.bind(store);
    store.getRound = (s, r, round) => {
      if (round === reply.round) reads++;
      return read(s, r, round);
    };
    const waited = engine.getRound(session, 'r1', reply.round, { waitMs: 60_000 });
    // Room for a poller of any interval under a second to read meanwhile; the wait must not.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(reads).toBe(1);
    release();
    expect((await waited)?.status).toBe('done');
    expect(reads).toBe(2);
  });

  it('ends a wait when its signal aborts, the round still running', async () => {
    const { engine, session, release } = await setup({ autoApprove: 'all' });
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls: [cmd('c1', 'long')] });
    if (reply.status !== 'running') throw new Error('expected running');
    const gone = new AbortController();
    const waited = engine.getRound(session, 'r1', reply.round, { waitMs: 60_000, signal: gone.signal });
    gone.abort();
    expect((await waited)?.status).toBe('running');
    release();
  });

  it('says waiting_for_approval at the gate and waiting_for_input for a parked call, then done once answered', async () => {
    const { engine, session, release, until } = await setup();
    // The client tool first: the gate holds the whole round, then the parked call holds the serial command behind it.
    const calls = [{ id: 'c1', name: 'ui_lookup', args: { q: 'x' } }, cmd('c2', 'echo hi')];
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls });
    if (reply.status !== 'running') throw new Error('expected running');
    const asking = await until(
      'r1',
      reply.round,
      (v) => v?.status === 'running' && v.calls[1]?.state === 'waiting_for_approval',
    );
    expect(asking?.status === 'running' && asking.calls[0]?.state).toBe('queued');
    const [pending] = await engine.pendingConfirmations(session);
    await engine.answerConfirmation(session, pending?.confirmationId ?? '', { approve: true, remember: false });
    const parked = await until(
      'r1',
      reply.round,
      (v) => v?.status === 'running' && v.calls[0]?.state === 'waiting_for_input',
    );
    expect(parked?.status === 'running' && parked.calls[1]?.state).toBe('queued');
    const [input] = await engine.pendingInputs(session);
    await engine.answerInput(session, input?.inputId ?? '', { output: { found: 1 } });
    await until('r1', reply.round, (v) => v?.status === 'running' && v.calls[1]?.state === 'running');
    release();
    const done = await until('r1', reply.round, (v) => v?.status === 'done');
    expect(done?.status === 'done' && done.response.results.map((r) => r.status)).toEqual(['ok', 'ok']);
  });

  it('cancels one round: its calls end cancelled in its answer; another round of the run goes on', async () => {
    const { engine, session, release, until } = await setup({ autoApprove: 'all' });
    const a = await engine.submitRoundAsync({ session, run: 'r1', calls: [cmd('c1', 'a')] });
    const b = await engine.submitRoundAsync({ session, run: 'r1', calls: [cmd('c1', 'b')] });
    if (a.status !== 'running' || b.status !== 'running') throw new Error('expected running');
    await until('r1', a.round, (v) => v?.status === 'running' && v.calls[0]?.state === 'running');
    expect(await engine.cancelRound(session, 'r1', a.round)).toBe(1);
    const cancelled = await engine.getRound(session, 'r1', a.round);
    expect(cancelled?.status === 'done' && cancelled.response.results[0]?.error?.code).toBe('cancelled');
    expect((await engine.getRound(session, 'r1', b.round))?.status).toBe('running');
    release();
    const other = await until('r1', b.round, (v) => v?.status === 'done');
    expect(other?.status === 'done' && other.response.results[0]?.status).toBe('ok');
  });

  it('is null for a round the run does not have, and after TD_ROUND_RETENTION_MS, when its key begins anew', async () => {
    let now = Date.now();
    const { engine, session, release, until } = await setup({ autoApprove: 'all', now: () => now, retentionMs: 1_000 });
    expect(await engine.getRound(session, 'r1', 'rnd_nope')).toBeNull();
    const calls = [cmd('c1', 'x')];
    const reply = await engine.submitRoundAsync({ session, run: 'r1', calls, idempotencyKey: 'k' });
    if (reply.status !== 'running') throw new Error('expected running');
    expect(await engine.getRound(session, 'other-run', reply.round)).toBeNull();
    release();
    await until('r1', reply.round, (v) => v?.status === 'done');
    now += 999;
    expect((await engine.getRound(session, 'r1', reply.round))?.status).toBe('done');
    now += 1;
    expect(await engine.getRound(session, 'r1', reply.round)).toBeNull();
    const again = await engine.submitRoundAsync({ session, run: 'r1', calls, idempotencyKey: 'k' });
    expect(again.status === 'running' && again.round).not.toBe(reply.round);
    release();
  });
});
