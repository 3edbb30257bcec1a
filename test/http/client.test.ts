import { TdApiError, TdClient, type TdEvent } from '@tool-dispatch/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, rt, sleep, startHarness, uid } from './harness.js';

let h: Harness;
let client: TdClient;
beforeAll(async () => {
  h = await startHarness();
  client = h.client;
});
afterAll(() => h.close());

async function session(provider = 'openai', extra: Record<string, unknown> = {}) {
  const s = uid('s');
  await client.putSession(s, { provider, ...extra });
  await client.submitRound(s, uid('setup'), [
    { id: 'f', name: 'find_tools', args: { names: ['calculate', 'run_command'] } },
  ]);
  return s;
}

async function apiError(p: Promise<unknown>): Promise<TdApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TdApiError) return e;
    throw e;
  }
  throw new Error('expected a TdApiError');
}

describe('TdClient', () => {
  it('creates, reads and lists a session’s tools in every format', async () => {
    const s = uid('s');
    const created = await client.putSession(s, { provider: 'openai' });
    expect(created.id).toBe(s);
    expect((await client.getSession(s)).provider).toBe('openai');
    const neutral = await client.tools(s);
    expect(neutral.tools.map((t) => t.name).sort()).toEqual(['find_tools', 'run_tool']);
    expect(typeof neutral.context).toBe('string');
    const openai = await client.tools(s, { format: 'openai' });
    expect(openai.tools.every((t) => t.type === 'function')).toBe(true);
    const anthropic = await client.tools(s, { format: 'anthropic' });
    expect(anthropic.tools.every((t) => t.input_schema.type === 'object')).toBe(true);
  });

  it('submits rounds in every format, with an Idempotency-Key', async () => {
    const s = await session();
    const run = uid('run');
    const calls = [rt('calculate', { expression: '6+1' })];
    const plain = await client.submitRound(s, run, calls, { idempotencyKey: 'k1' });
    expect(plain.results[0]?.output).toEqual({ value: 7 });
    const retry = await client.submitRound(s, run, calls, { idempotencyKey: 'k1' });
    expect(retry.round).toBe(plain.round);
    const conflict = await apiError(
      client.submitRound(s, run, [rt('calculate', { expression: '1' })], { idempotencyKey: 'k1' }),
    );
    expect(conflict.status).toBe(409);
    expect(conflict.code).toBe('idempotency_conflict');
    const openai = await client.submitRound(s, run, [rt('calculate', { expression: '2+2' }, 'o1')], {
      format: 'openai',
    });
    expect(openai.messages[0]).toEqual({ role: 'tool', tool_call_id: 'o1', content: '{"value":4}' });
    const anthropic = await client.submitRound(
      s,
      run,
      [{ type: 'tool_use', id: 'a1', name: 'run_tool', input: { name: 'calculate', args: { expression: '3+3' } } }],
      { format: 'anthropic' },
    );
    expect(anthropic.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'a1',
      content: '{"value":6}',
      is_error: false,
    });
  });

  it('lists and answers confirmations, reads history and cancels runs', async () => {
    const s = await session();
    const pending = client.submitRound(s, uid('run'), [rt('run_command', { command: 'true' }, 'cmd')]);
    let listed = await client.confirmations(s);
    for (let i = 0; listed.length === 0 && i < 100; i++) {
      await sleep(20);
      listed = await client.confirmations(s);
    }
    expect(listed[0]).toMatchObject({ callId: 'cmd', name: 'run_command' });
    const answered = await client.answerConfirmation(s, 'cmd', { approve: true });
    expect(answered.confirmation.confirmationId).toBe(listed[0]?.confirmationId);
    expect((await pending).results[0]?.status).toBe('ok');
    const history = await client.history(s, { tool: 'run_command' });
    expect(history.map((e) => e.id)).toEqual(['cmd']);
    expect(history[0]?.at).toEqual(expect.any(String));

    const run = uid('run');
    const waiting = client.submitRound(s, run, [rt('run_command', { command: 'true' })]);
    for (let i = 0; (await client.confirmations(s)).length === 0 && i < 100; i++) await sleep(20);
    expect(await client.cancelRun(s, run)).toBe(1);
    expect((await waiting).results[0]?.error?.code).toBe('cancelled');
  });

  it('(v1.3) hands a round over with submitRoundAsync and reads it with getRound: states, wait, format, retries, 404', async () => {
    const s = await session();
    const run = uid('run');
    const calls = [rt('run_command', { command: 'true' }, 'gated'), rt('calculate', { expression: '5*5' }, 'calc')];
    const accepted = await client.submitRoundAsync(s, run, calls, { idempotencyKey: 'ka' });
    if (accepted.status !== 'running') throw new Error(`expected running, got ${JSON.stringify(accepted)}`);
    expect(accepted).toEqual({ status: 'running', round: expect.any(String), run });
    // At the confirm gate: the command waits for approval, the whole round with it.
    let state = await client.getRound(s, run, accepted.round);
    for (let i = 0; i < 250 && !(state.status === 'running' && state.calls[0]?.state === 'waiting_for_approval'); i++) {
      await sleep(20);
      state = await client.getRound(s, run, accepted.round);
    }
    expect(state).toEqual({
      status: 'running',
      round: accepted.round,
      run,
      calls: [
        { id: 'gated', name: 'run_command', state: 'waiting_for_approval' },
        { id: 'calc', name: 'calculate', state: 'queued' },
      ],
    });
    // A retry under the key while it waits: the same round, still running.
    expect(await client.submitRoundAsync(s, run, calls, { idempotencyKey: 'ka' })).toEqual(accepted);
    const waited = client.getRound(s, run, accepted.round, { wait: 60_000 });
    await client.answerConfirmation(s, 'gated', { approve: true });
    const done = await waited;
    if (done.status !== 'done') throw new Error(`expected done, got ${JSON.stringify(done)}`);
    expect(done.response.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    // The same stored answer: a waiting retry, an async retry, and the OpenAI view as the POST gives it.
    expect(await client.submitRound(s, run, calls, { idempotencyKey: 'ka' })).toEqual(done.response);
    expect(await client.submitRoundAsync(s, run, calls, { idempotencyKey: 'ka' })).toEqual(done);
    const openai = await client.getRound(s, run, accepted.round, { format: 'openai' });
    const posted = await client.submitRound(s, run, calls, { idempotencyKey: 'ka', format: 'openai' });
    expect(openai).toEqual({ status: 'done', response: posted });
    const missing = await apiError(client.getRound(s, run, 'rnd_nope'));
    expect([missing.status, missing.code]).toEqual([404, 'round_not_found']);
    const badWait = await apiError(client.getRound(s, run, accepted.round, { wait: 60_001 }));
    expect(badWait.status).toBe(400);
  });

  it('reads the catalog, health, readiness and metrics', async () => {
    const catalog = await client.catalog();
    expect(catalog.find((t) => t.name === 'run_command')?.confirm).toBe(true);
    expect(await client.health()).toBe(true);
    expect(await client.ready()).toBe(true);
    expect(await client.metrics()).toContain('# TYPE');
  });

  it('throws TdApiError with the status and the error code', async () => {
    const missing = await apiError(client.getSession(uid('none')));
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('session_not_found');
    const bad = await apiError(client.putSession('bad id', { provider: 'openai' }));
    expect(bad.status).toBe(400);
    expect(bad.code).toBe('invalid_id');
  });

  it('sends the token', async () => {
    const locked = await startHarness({ server: { apiToken: 'tok-123' } });
    try {
      const wrong = new TdClient({ baseUrl: locked.base, token: 'nope' });
      expect((await apiError(wrong.catalog())).status).toBe(401);
      expect((await locked.client.catalog()).length).toBeGreaterThan(0);
    } finally {
      await locked.close();
    }
  });
});

describe('TdClient.events', () => {
  it('yields typed events until the signal aborts', async () => {
    const s = await session();
    const controller = new AbortController();
    const seen: TdEvent[] = [];
    const reading = (async () => {
      for await (const event of client.events(s, { signal: controller.signal })) {
        seen.push(event);
        if (event.name === 'round.completed') controller.abort();
      }
    })();
    await sleep(100);
    const b = await client.submitRound(s, uid('run'), [rt('calculate', { expression: '1+2' })]);
    await reading;
    expect(seen.map((e) => e.name)).toEqual(['round.started', 'tool.result', 'round.completed']);
    const result = seen[1];
    if (result?.name !== 'tool.result') throw new Error('expected tool.result');
    expect(result.data).toMatchObject({ round: b.round, status: 'ok', output: { value: 3 } });
  });

  it('reconnects with Last-Event-ID after the connection drops, losing and repeating nothing', async () => {
    const own = await startHarness();
    try {
      const s = uid('s');
      await own.client.putSession(s, { provider: 'openai' });
      await own.client.submitRound(s, uid('setup'), [{ id: 'f', name: 'find_tools', args: { names: ['calculate'] } }]);
      const seen: TdEvent[] = [];
      const controller = new AbortController();
      let completed = 0;
      const reading = (async () => {
        for await (const event of own.client.events(s, { signal: controller.signal, retryMs: 50 })) {
          seen.push(event);
          if (event.name === 'round.completed' && ++completed === 2) controller.abort();
        }
      })();
      await sleep(100);
      await own.client.submitRound(s, uid('run'), [rt('calculate', { expression: '1+1' })]);
      for (let i = 0; completed < 1 && i < 100; i++) await sleep(20);
      own.app.server.closeAllConnections();
      await own.client.submitRound(s, uid('run'), [rt('calculate', { expression: '2+2' })]);
      await reading;
      expect(seen.map((e) => e.name)).toEqual([
        'round.started',
        'tool.result',
        'round.completed',
        'round.started',
        'tool.result',
        'round.completed',
      ]);
      expect(new Set(seen.map((e) => e.id)).size).toBe(6);
    } finally {
      await own.close();
    }
  });

  it('resumes after a given lastEventId', async () => {
    const s = await session();
    await client.submitRound(s, uid('run'), [rt('calculate', { expression: '4+4' })]);
    const controller = new AbortController();
    const all: TdEvent[] = [];
    for await (const e of client.events(s, { lastEventId: '0', signal: controller.signal })) {
      all.push(e);
      if (e.name === 'round.completed' && all.filter((x) => x.name === 'round.completed').length === 2) break;
    }
    const started = all.filter((e) => e.name === 'round.started')[1];
    if (!started) throw new Error('no second round.started');
    const after: TdEvent[] = [];
    for await (const e of client.events(s, { lastEventId: started.id })) {
      after.push(e);
      if (e.name === 'round.completed') break;
    }
    expect(after.map((e) => e.name)).toEqual(['tool.result', 'round.completed']);
  });

  it('throws TdApiError for an unknown session instead of retrying', async () => {
    const error = await apiError(
      (async () => {
        for await (const _ of client.events(uid('none'))) break;
      })(),
    );
    expect(error.status).toBe(404);
  });

  describe('parked calls', () => {
    const LOOKUP = { name: 'ui_lookup', description: 'Looks up on the client.', parameters: { type: 'object' } };

    it('lists parked calls and answers them by inputId or callId, with 404, 409 and 400 as TdApiError', async () => {
      const s = uid('s');
      await client.putSession(s, { provider: 'claude-code', clientTools: [LOOKUP] });
      await client.submitRound(s, uid('setup'), [{ id: 'f', name: 'find_tools', args: { names: ['ask_user'] } }]);
      const run = uid('run');
      const round = client.submitRound(s, run, [
        { id: 'q', name: 'ask_user', args: { question: 'Which?', choices: ['a', 'b'] } },
        { id: 'l', name: 'ui_lookup', args: { k: 1 } },
      ]);
      let parked = await client.inputs(s);
      for (let i = 0; i < 200 && parked.length === 0; i++) {
        await sleep(10);
        parked = await client.inputs(s);
      }
      expect(parked).toEqual([expect.objectContaining({ kind: 'interactive', callId: 'q', name: 'ask_user', run })]);
      expect((await apiError(client.answerInput(s, 'q', { output: 'c' }))).status).toBe(400);
      expect(await client.answerInput(s, 'q', { output: 'b' })).toEqual({ inputId: parked[0]?.inputId, status: 'ok' });
      expect((await apiError(client.answerInput(s, parked[0]?.inputId ?? '', { output: 'a' }))).status).toBe(404);
      for (let i = 0; i < 200 && (await client.inputs(s)).length === 0; i++) await sleep(10);
      expect(await client.answerInput(s, 'l', { error: 'offline' })).toMatchObject({ status: 'error' });
      const { results } = await round;
      expect(results.map((r) => [r.status, r.output ?? r.error?.message])).toEqual([
        ['ok', { answer: 'b' }],
        ['error', 'offline'],
      ]);
    });

    it('runs a round answering its parked calls through onInput, asking again after a refused answer', async () => {
      const s = uid('s');
      await client.putSession(s, { provider: 'claude-code', clientTools: [LOOKUP] });
      await client.submitRound(s, uid('setup'), [{ id: 'f', name: 'find_tools', args: { names: ['ask_user'] } }]);
      const asked: string[] = [];
      const { results } = await client.runRound(
        s,
        uid('run'),
        [
          { id: 'q', name: 'ask_user', args: { question: 'Which?', choices: ['yes'] } },
          { id: 'l', name: 'ui_lookup', args: { k: 2 } },
          { id: 'x', name: 'ui_lookup', args: { k: 3 } },
        ],
        {
          pollIntervalMs: 50,
          onInput: (input) => {
            asked.push(input.callId);
            if (input.callId === 'x') throw new Error('the client could not do it');
            if (input.name === 'ask_user') return { output: asked.length === 1 ? 'no' : 'yes' };
            return { output: { k: input.args.k } };
          },
        },
      );
      expect(results.map((r) => [r.status, r.output ?? r.error?.message])).toEqual([
        ['ok', { answer: 'yes' }],
        ['ok', { k: 2 }],
        ['error', 'the client could not do it'],
      ]);
      expect(asked).toEqual(['q', 'q', 'l', 'x']);
    });
  });
});
