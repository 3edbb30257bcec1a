import { afterAll, expect, it } from 'vitest';
import { Api, type Call, direct, type RoundAnswer, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';
import { type ProcessGroup, sleep, startExtraCoordinator, stopGroup } from './service.js';

/** A parked call as API.md shows it (GET .../inputs, input.requested). */
interface Input {
  inputId: string;
  kind: string;
  round: string;
  run: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

const LOOKUP = {
  name: 'client_lookup',
  description: 'Looks something up on the client.',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
};
const SCAN = { ...LOOKUP, name: 'client_scan', description: 'Scans on the client.', concurrency: 'concurrent' };
/** Short enough to wait for one timeout, long enough for every other test to answer well before it. */
const INPUT_TIMEOUT_MS = 6_000;

async function inputs(api: Api, s: string): Promise<Input[]> {
  const r = await api.request('GET', `/v1/sessions/${s}/inputs`);
  if (r.status !== 200) throw new Error(`GET inputs → ${r.status} ${r.text}`);
  return r.json.inputs;
}

/** Waits until the call is parked (listed by GET inputs), failing at once if its round answers first. */
async function parked(api: Api, s: string, callId: string, round?: Promise<unknown>): Promise<Input> {
  let answered = false;
  round?.then(
    () => (answered = true),
    () => (answered = true),
  );
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(25)) {
    const found = (await inputs(api, s)).find((i) => i.callId === callId);
    if (found) return found;
    if (answered) throw new Error(`call ${callId} was never parked: its round answered first`);
  }
  throw new Error(`call ${callId} was never parked`);
}

const answer = (api: Api, s: string, id: string, body: unknown) =>
  api.request('POST', `/v1/sessions/${s}/inputs/${id}`, body);

/** Resolves 'pending' when `p` has not settled within `ms`. */
const stateWithin = (p: Promise<unknown>, ms: number) =>
  Promise.race([
    p.then(
      () => 'settled',
      () => 'settled',
    ),
    sleep(ms).then(() => 'pending'),
  ]);

// API.md "Parked calls: interactive and client tools", DESIGN.md pass 2 "Parked calls".
describeModes('parked calls', (mode) => {
  const f = useService(mode, { env: { TD_INPUT_TIMEOUT_MS: String(INPUT_TIMEOUT_MS), MAX_CONCURRENT_TOOLS: '2' } });
  const start = (s: string, run: string, calls: Call[], headers?: Record<string, string>) => {
    const p = f.api.round(s, run, calls, headers ? { headers } : {});
    p.catch(() => undefined);
    return p;
  };
  /** A claude-code session (ask_user called directly) with the client tools, every schema fetched. */
  const session = async (extra: Record<string, unknown> = {}) =>
    f.api.session(['ask_user', 'http_request', 'run_command', 'calculate'], {
      provider: 'claude-code',
      autoApprove: 'all',
      clientTools: [LOOKUP, SCAN],
      ...extra,
    });

  it('parks ask_user: input.requested after round.started, GET inputs, the posted answer as {answer}, tool.result after, history', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    const run = uid('run');
    const call = direct('ask_user', { question: 'Favourite colour?' });
    const round = start(s, run, [call]);
    const requested = await tap.waitFor((es) => es.find((e) => e.name === 'input.requested'));
    expect(requested.data).toEqual({
      inputId: expect.any(String),
      kind: 'interactive',
      round: expect.any(String),
      run,
      callId: call.id,
      name: 'ask_user',
      args: { question: 'Favourite colour?' },
    });
    expect(requested.id).toBeTruthy();
    const names = tap.events.map((e) => e.name);
    expect(names.indexOf('round.started')).toBeLessThan(names.indexOf('input.requested'));
    expect(await inputs(f.api, s)).toEqual([requested.data]);
    expect(await stateWithin(round, 300)).toBe('pending');
    const a = await answer(f.api, s, requested.data.inputId, { output: 'blue' });
    expect(a.status, a.text).toBe(200);
    expect(a.json).toEqual({ inputId: requested.data.inputId, status: 'ok' });
    const b: RoundAnswer = await round;
    expect(b.results[0]).toMatchObject({ id: call.id, name: 'ask_user', status: 'ok', output: { answer: 'blue' } });
    const done = await tap.waitFor(
      (es) => es.some((e) => e.name === 'round.completed' && e.data.round === b.round) && es,
    );
    const order = done.map((e) => e.name);
    expect(order.indexOf('input.requested')).toBeLessThan(order.indexOf('tool.result'));
    expect((await f.api.history(s, 'ask_user')).map((e) => [e.id, e.status, e.output])).toEqual([
      [call.id, 'ok', { answer: 'blue' }],
    ]);
    const again = await answer(f.api, s, requested.data.inputId, { output: 'red' });
    expect(again.status).toBe(404);
    expect(typeof again.json?.error?.code).toBe('string');
    expect(await inputs(f.api, s)).toEqual([]);
    tap.close();
  });

  it('asks the same question again in the same run (interactive calls are never deduped), under another inputId', async () => {
    const s = await session();
    const run = uid('run');
    const ids: string[] = [];
    for (const reply of ['yes', 'no']) {
      const call = direct('ask_user', { question: 'Sure?' });
      const round = start(s, run, [call]);
      const input = await parked(f.api, s, call.id, round);
      ids.push(input.inputId);
      expect((await answer(f.api, s, input.inputId, { output: reply })).status).toBe(200);
      expect((await round).results[0]).toMatchObject({ status: 'ok', output: { answer: reply } });
    }
    expect(new Set(ids).size).toBe(2);
  });

  it('parks a client tool (kind client): an output ends it ok, an error message error/handler_error', async () => {
    const s = await session({ provider: 'openai' });
    const run = uid('run');
    const ok = rt('client_lookup', { q: 'x' });
    const r1 = start(s, run, [ok]);
    const input = await parked(f.api, s, ok.id, r1);
    expect(input).toMatchObject({ kind: 'client', name: 'client_lookup', run, args: { q: 'x' } });
    expect((await answer(f.api, s, input.inputId, { output: { v: 1 } })).json).toMatchObject({ status: 'ok' });
    expect((await r1).results[0]).toMatchObject({ name: 'client_lookup', status: 'ok', output: { v: 1 } });
    const failing = rt('client_lookup', { q: 'y' });
    const r2 = start(s, run, [failing]);
    const second = await parked(f.api, s, failing.id, r2);
    expect((await answer(f.api, s, second.inputId, { error: 'nope' })).json).toEqual({
      inputId: second.inputId,
      status: 'error',
    });
    expect((await r2).results[0]).toMatchObject({ status: 'error', error: { code: 'handler_error', message: 'nope' } });
  });

  it('dedupes a client tool’s ok answer in its run but caches nothing: another run asks the client again', async () => {
    const s = await session();
    const run = uid('run');
    const first = direct('client_lookup', { q: 'same' });
    const r1 = start(s, run, [first]);
    await answer(f.api, s, (await parked(f.api, s, first.id, r1)).inputId, { output: { v: 1 } });
    await r1;
    const repeat = await f.api.one(s, direct('client_lookup', { q: 'same' }), run);
    expect(repeat).toMatchObject({ status: 'deduped', dedupedFrom: first.id, output: { v: 1 } });
    const elsewhere = direct('client_lookup', { q: 'same' });
    const r2 = start(s, uid('run'), [elsewhere]);
    await answer(f.api, s, (await parked(f.api, s, elsewhere.id, r2)).inputId, { output: { v: 2 } });
    expect((await r2).results[0]).toMatchObject({ status: 'ok', output: { v: 2 } });
  });

  it('validates first: invalid args never park; an unfetched schema is answered schema, not parked', async () => {
    const s = await session();
    const b = await f.api.round(s, uid('run'), [
      direct('ask_user', { question: 5 }),
      direct('client_lookup', { q: 1 }),
    ]);
    expect(b.results.map((r) => r.status)).toEqual(['invalid', 'invalid']);
    const fresh = await f.api.session([], { provider: 'claude-code' });
    expect((await f.api.one(fresh, direct('ask_user', { question: 'q' }))).status).toBe('schema');
    expect(await inputs(f.api, s)).toEqual([]);
    expect(await inputs(f.api, fresh)).toEqual([]);
  });

  it('accepts a bare callId when one parked call has it, 409 when several do', async () => {
    const s = await session();
    const shared = uid('same');
    const r1 = start(s, uid('run'), [direct('client_lookup', { q: '1' }, shared)]);
    const r2 = start(s, uid('run'), [direct('client_lookup', { q: '2' }, shared)]);
    const first = await parked(f.api, s, shared, r1);
    for (const end = Date.now() + 20_000; (await inputs(f.api, s)).length < 2 && Date.now() < end; ) await sleep(25);
    const ambiguous = await answer(f.api, s, shared, { output: 'x' });
    expect(ambiguous.status, ambiguous.text).toBe(409);
    expect(await inputs(f.api, s)).toHaveLength(2);
    expect((await answer(f.api, s, first.inputId, { output: 'one' })).status).toBe(200);
    expect((await answer(f.api, s, shared, { output: 'two' })).status).toBe(200);
    const outputs = [(await r1).results[0]?.output, (await r2).results[0]?.output].sort();
    expect(outputs).toEqual(['one', 'two']);
  });

  it('answers 400 for bad bodies and an ask_user answer outside its choices, 404 for ids never parked, and changes nothing', async () => {
    const s = await session();
    const call = direct('ask_user', { question: 'Pick', choices: ['left', 'right'] });
    const round = start(s, uid('run'), [call]);
    const input = await parked(f.api, s, call.id, round);
    for (const body of [{}, { output: 'left', error: 'y' }, '{not json', { error: 5 }, [], { output: 'up' }]) {
      const r = await answer(f.api, s, input.inputId, body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
      expect(typeof r.json?.error?.message).toBe('string');
    }
    expect((await answer(f.api, s, uid('never'), { output: 'left' })).status).toBe(404);
    expect((await answer(f.api, uid('no-session'), input.inputId, { output: 'left' })).status).toBe(404);
    expect((await f.api.request('POST', `/v1/sessions/${s}/inputs/bad%20id`, { output: 1 })).status).toBe(400);
    expect(await inputs(f.api, s)).toEqual([input]);
    expect(await stateWithin(round, 300)).toBe('pending');
    expect((await answer(f.api, s, call.id, { output: 'right' })).status).toBe(200);
    expect((await round).results[0]?.output).toEqual({ answer: 'right' });
  });

  it('keeps order: an interactive call and a client tool (serial by default) run alone; nothing after them starts before their answer', async () => {
    const s = await session();
    const tag = tagOf('order');
    const ask = direct('ask_user', { question: 'Go?' });
    const lookup = direct('client_lookup', { q: 'then' });
    const round = start(s, uid('run'), [
      ask,
      direct('http_request', { url: f.target.url('echo', tag, 0) }),
      lookup,
      direct('http_request', { url: f.target.url('echo', tag, 1) }),
    ]);
    const first = await parked(f.api, s, ask.id, round);
    await sleep(300);
    expect(f.target.tag(tag).hits).toBe(0);
    await answer(f.api, s, first.inputId, { output: 'go' });
    const second = await parked(f.api, s, lookup.id, round);
    expect(f.target.tag(tag).hits).toBe(1);
    await sleep(300);
    expect(f.target.tag(tag).hits).toBe(1);
    await answer(f.api, s, second.inputId, { output: 'ok' });
    expect((await round).results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(f.target.tag(tag).hits).toBe(2);
  });

  it('runs a concurrent client tool in its batch, counting toward the run’s in-flight limit (2 here) while parked', async () => {
    const s = await session();
    const tag = tagOf('limit');
    const a = direct('client_scan', { q: 'a' });
    const b = direct('client_scan', { q: 'b' });
    const round = start(s, uid('run'), [a, b, direct('http_request', { url: f.target.url('echo', tag, 0) })]);
    const pa = await parked(f.api, s, a.id, round);
    const pb = await parked(f.api, s, b.id, round);
    await sleep(300);
    expect(f.target.tag(tag).hits, 'the third call of the batch started past the limit').toBe(0);
    await answer(f.api, s, pa.inputId, { output: 'A' });
    for (const end = Date.now() + 10_000; f.target.tag(tag).hits === 0 && Date.now() < end; ) await sleep(25);
    expect(f.target.tag(tag).hits).toBe(1);
    await answer(f.api, s, pb.inputId, { output: 'B' });
    expect((await round).results.map((r) => r.output?.status ?? r.output)).toEqual(['A', 'B', 200]);
  });

  it('holds no worker slot: three parked ask_user rounds do not stop serial run_command rounds of other sessions', async () => {
    const waiting = await Promise.all([0, 1, 2].map(() => session()));
    const asks = waiting.map((s) => {
      const call = direct('ask_user', { question: `Waiting in ${s}?` });
      return { s, call, round: start(s, uid('run'), [call]) };
    });
    for (const a of asks) await parked(f.api, a.s, a.call.id, a.round);
    const others = await Promise.all([0, 1, 2, 3].map(() => session()));
    const t0 = Date.now();
    const runs = await Promise.all(
      others.map((s) => f.api.round(s, uid('run'), [direct('run_command', { command: 'sleep 0.2; echo ran' })])),
    );
    expect(runs.map((r) => r.results[0]?.output?.stdout)).toEqual(['ran\n', 'ran\n', 'ran\n', 'ran\n']);
    expect(Date.now() - t0).toBeLessThan(5_000);
    for (const a of asks) expect(await stateWithin(a.round, 0)).toBe('pending');
    for (const a of asks) await answer(f.api, a.s, a.call.id, { output: 'done' });
    for (const a of asks) expect((await a.round).results[0]?.status).toBe('ok');
  });

  it('ends a parked call error/timeout after TD_INPUT_TIMEOUT_MS and takes no answer after', async () => {
    const s = await session();
    const call = direct('ask_user', { question: 'Anyone there?' });
    const t0 = Date.now();
    const round = start(s, uid('run'), [call]);
    const input = await parked(f.api, s, call.id, round);
    const b = await round;
    expect(b.results[0]).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(INPUT_TIMEOUT_MS - 500);
    expect((await answer(f.api, s, input.inputId, { output: 'late' })).status).toBe(404);
    expect(await inputs(f.api, s)).toEqual([]);
  }, 30_000);

  it('ends parked calls error/cancelled when the run is cancelled, counting them in {cancelled}', async () => {
    const s = await session();
    const run = uid('run');
    const ask = direct('ask_user', { question: 'Cancel me?' });
    const round = start(s, run, [ask, direct('client_lookup', { q: 'never asked' })]);
    const input = await parked(f.api, s, ask.id, round);
    const del = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ cancelled: 2 });
    const b = await round;
    expect(b.results.map((r) => [r.status, r.error?.code])).toEqual([
      ['error', 'cancelled'],
      ['error', 'cancelled'],
    ]);
    expect((await answer(f.api, s, input.inputId, { output: 'late' })).status).toBe(404);
    expect(await inputs(f.api, s)).toEqual([]);
  });

  if (mode !== 'embedded') {
    const extra: ProcessGroup[] = [];
    afterAll(async () => {
      await Promise.all(extra.map((g) => stopGroup(g)));
    });

    it('takes the answer on a second coordinator, which lists the parked call too', async () => {
      const second = await startExtraCoordinator(f.service);
      extra.push(second.group);
      const other = new Api(second.base);
      const s = await session();
      const call = direct('ask_user', { question: 'Answered elsewhere?' });
      const round = start(s, uid('run'), [call]);
      const input = await parked(f.api, s, call.id, round);
      expect(await inputs(other, s)).toEqual([input]);
      const a = await answer(other, s, input.inputId, { output: 'from the other one' });
      expect(a.status, a.text).toBe(200);
      expect((await round).results[0]).toMatchObject({ status: 'ok', output: { answer: 'from the other one' } });
      expect(await inputs(f.api, s)).toEqual([]);
    }, 120_000);
  }
  // Embedded mode is one process: the second-coordinator case is not declared there (not a skip).
});
