import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MAX_OUTPUT_BYTES, resolveConfig, type ToolDefinition } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { MemoryConfirmHub } from './confirm/memory.js';
import { Engine } from './engine.js';
import type { DispatchEvent } from './events/event-bus.js';
import { MemoryEventBus } from './events/memory.js';
import { FakeExecutor, sleep } from './executors/fake.js';
import { MemoryInputHub } from './inputs/memory.js';
import { MemoryLimits } from './limits/memory.js';
import type { ParkedInput } from './model.js';
import { MemoryStore } from './store/memory.js';

// API.md "Parked calls" through the engine: pass 2 parks interactive and client-tool calls,
// keeps their place in the round's order and in the run's limiter, and ends them by answer,
// timeout, cancellation or a drain.
let seq = 0;
const direct = (name: string, args: Record<string, unknown> = {}, id = `c${++seq}`) => ({ id, name, args });

const LOOKUP: ToolDefinition = { name: 'ui_lookup', description: 'Look up.', parameters: { type: 'object' } };
const FAST: ToolDefinition = { ...LOOKUP, name: 'ui_fast', concurrency: 'concurrent' };

async function setup(opts: { inputTimeoutMs?: number; maxConcurrentTools?: number } = {}) {
  const ex = new FakeExecutor();
  ex.on('calculate', async (a) => ({ value: Number(a.expression) }));
  ex.on('run_command', async () => ({ exitCode: 0, stdout: '', stderr: '' }));
  const config = resolveConfig(
    {
      workspaceRoot: mkdtempSync(path.join(tmpdir(), 'td-parked-')),
      inputTimeoutMs: opts.inputTimeoutMs ?? 60_000,
      maxConcurrentTools: opts.maxConcurrentTools ?? 5,
    },
    {},
  );
  const engine = new Engine({
    config,
    executor: ex,
    store: new MemoryStore(),
    events: new MemoryEventBus(),
    confirmations: new MemoryConfirmHub(),
    inputs: new MemoryInputHub(),
    limits: new MemoryLimits(),
  });
  const session = `s${++seq}`;
  await engine.putSession(session, { provider: 'claude-code', autoApprove: 'all', clientTools: [LOOKUP, FAST] });
  await engine.submitRound({ session, run: 'setup', calls: [direct('find_tools', {})] });
  const events: DispatchEvent[] = [];
  await engine.subscribe(session, undefined, (e) => events.push(e));
  const round = (calls: unknown[], run = 'r1') => {
    const p = engine.submitRound({ session, run, calls });
    p.catch(() => undefined);
    return p;
  };
  /** Waits until `n` calls are parked; the oldest first. */
  const parked = async (n = 1): Promise<ParkedInput[]> => {
    for (let i = 0; i < 600; i++) {
      const list = await engine.pendingInputs(session);
      if (list.length >= n) return list;
      await sleep(5);
    }
    throw new Error(`${n} calls never parked`);
  };
  return { engine, ex, session, events, round, parked };
}

describe('pass 2: parked calls', () => {
  it('asks ask_user after round.started, answers it {answer}, and says tool.result after input.requested', async () => {
    const t = await setup();
    const call = direct('ask_user', { question: 'Colour?' });
    const round = t.round([call]);
    const [input] = await t.parked();
    expect(input).toMatchObject({ kind: 'interactive', callId: call.id, name: 'ask_user', run: 'r1' });
    expect(await t.engine.answerInput(t.session, call.id, { output: 'blue' })).toEqual({
      inputId: input?.inputId,
      status: 'ok',
    });
    const { results } = await round;
    expect(results[0]).toMatchObject({ status: 'ok', output: { answer: 'blue' } });
    await sleep(10);
    const names = t.events.map((e) => e.name);
    expect(names.indexOf('round.started')).toBeLessThan(names.indexOf('input.requested'));
    expect(names.indexOf('input.requested')).toBeLessThan(names.indexOf('tool.result'));
    expect(t.events.find((e) => e.name === 'input.requested')?.data).toEqual({
      inputId: input?.inputId,
      kind: 'interactive',
      round: (await round).round,
      run: 'r1',
      callId: call.id,
      name: 'ask_user',
      args: { question: 'Colour?' },
    });
  });

  it('never dedupes ask_user: the same question in the same run is asked again', async () => {
    const t = await setup();
    for (const answer of ['yes', 'no']) {
      const round = t.round([direct('ask_user', { question: 'Sure?' })]);
      const [input] = await t.parked();
      await t.engine.answerInput(t.session, input?.inputId ?? '', { output: answer });
      expect((await round).results[0]).toMatchObject({ status: 'ok', output: { answer } });
    }
  });

  it('keeps an interactive call serial: nothing after it starts before it is answered', async () => {
    const t = await setup();
    const round = t.round([direct('ask_user', { question: 'Go?' }), direct('calculate', { expression: '2' })]);
    await t.parked();
    await sleep(30);
    expect(t.ex.countOf('calculate')).toBe(0);
    await t.engine.answerInput(t.session, (await t.parked())[0]?.inputId ?? '', { output: 'go' });
    expect((await round).results.map((r) => r.status)).toEqual(['ok', 'ok']);
  });

  it('runs a concurrent client tool in its batch, holding a place of the run’s limit while parked', async () => {
    const t = await setup({ maxConcurrentTools: 2 });
    const round = t.round([
      direct('ui_fast', { n: 1 }),
      direct('ui_fast', { n: 2 }),
      direct('calculate', { expression: '3' }),
    ]);
    const both = await t.parked(2);
    await sleep(30);
    expect(t.ex.countOf('calculate')).toBe(0);
    await t.engine.answerInput(t.session, both[0]?.inputId ?? '', { output: 1 });
    for (let i = 0; i < 100 && t.ex.countOf('calculate') === 0; i++) await sleep(5);
    expect(t.ex.countOf('calculate')).toBe(1);
    await t.engine.answerInput(t.session, both[1]?.inputId ?? '', { output: 2 });
    expect((await round).results.map((r) => r.output)).toEqual([1, 2, { value: 3 }]);
  });

  it('dedupes a client tool’s ok answer in its run, like any tool with its flags', async () => {
    const t = await setup();
    const first = t.round([direct('ui_lookup', { q: 'x' })]);
    await t.engine.answerInput(t.session, (await t.parked())[0]?.inputId ?? '', { output: { v: 1 } });
    const original = (await first).results[0];
    const again = await t.engine.submitRound({
      session: t.session,
      run: 'r1',
      calls: [direct('ui_lookup', { q: 'x' })],
    });
    expect(again.results[0]).toMatchObject({ status: 'deduped', output: { v: 1 }, dedupedFrom: original?.id });
  });

  it('ends an error answer error/handler_error with the posted message', async () => {
    const t = await setup();
    const round = t.round([direct('ui_lookup', { q: 'y' })]);
    const [input] = await t.parked();
    expect(await t.engine.answerInput(t.session, input?.inputId ?? '', { error: 'nope' })).toMatchObject({
      status: 'error',
    });
    expect((await round).results[0]).toMatchObject({
      status: 'error',
      error: { code: 'handler_error', message: 'nope' },
    });
  });

  it('says error for an output over the output limit, the status the call then ends with', async () => {
    const t = await setup();
    const round = t.round([direct('ui_lookup', { q: 'z' })]);
    const [input] = await t.parked();
    const output = 'x'.repeat(MAX_OUTPUT_BYTES - 1); // its JSON, quoted, is one byte over
    expect(await t.engine.answerInput(t.session, input?.inputId ?? '', { output })).toEqual({
      inputId: input?.inputId,
      status: 'error',
    });
    expect((await round).results[0]).toMatchObject({
      status: 'error',
      error: { code: 'handler_error', message: expect.stringMatching(/over the limit of 2097152 bytes/) },
    });
  });

  it('refuses an ask_user answer outside its choices and keeps the call parked', async () => {
    const t = await setup();
    const round = t.round([direct('ask_user', { question: 'Which?', choices: ['a', 'b'] })]);
    const [input] = await t.parked();
    await expect(t.engine.answerInput(t.session, input?.inputId ?? '', { output: 'c' })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(await t.engine.pendingInputs(t.session)).toEqual([input]);
    await t.engine.answerInput(t.session, input?.inputId ?? '', { output: 'b' });
    expect((await round).results[0]?.output).toEqual({ answer: 'b' });
  });

  it('says not found for an id nothing is parked under, and ambiguous for a callId two parked calls have', async () => {
    const t = await setup();
    await expect(t.engine.answerInput(t.session, 'nothing', { output: 1 })).rejects.toMatchObject({
      code: 'input_not_found',
    });
    const a = t.round([direct('ui_lookup', { q: 1 }, 'same')], 'ra');
    const b = t.round([direct('ui_lookup', { q: 2 }, 'same')], 'rb');
    const both = await t.parked(2);
    await expect(t.engine.answerInput(t.session, 'same', { output: 1 })).rejects.toMatchObject({
      code: 'input_ambiguous',
    });
    for (const i of both) await t.engine.answerInput(t.session, i.inputId, { output: i.run });
    expect([(await a).results[0]?.output, (await b).results[0]?.output]).toEqual(['ra', 'rb']);
  });

  it('ends an unanswered call error/timeout after TD_INPUT_TIMEOUT_MS', async () => {
    const t = await setup({ inputTimeoutMs: 60 });
    const { results } = await t.round([direct('ask_user', { question: 'Anyone?' })]);
    expect(results[0]).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    expect(await t.engine.pendingInputs(t.session)).toEqual([]);
  });

  it('ends parked calls error/cancelled when the run is cancelled, and counts them', async () => {
    const t = await setup();
    const round = t.round([direct('ask_user', { question: 'Wait?' })], 'doomed');
    await t.parked();
    expect(await t.engine.cancelRun(t.session, 'doomed')).toBe(1);
    expect((await round).results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(await t.engine.pendingInputs(t.session)).toEqual([]);
  });

  it('lets a drain end an embedded parked call cancelled after its grace, saying the service stopped', async () => {
    const t = await setup();
    const round = t.round([direct('ask_user', { question: 'Still there?' }), direct('calculate', { expression: '1' })]);
    await t.parked();
    await t.engine.drain(20);
    const { results } = await round;
    expect(results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(results[0]?.error?.message).toMatch(/service stopped/);
    expect(results[1]?.status).toBe('ok');
  });
});
