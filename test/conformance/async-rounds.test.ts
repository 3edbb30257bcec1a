import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { until } from '../support/until.js';
import { type Answer, Api, type Call, direct, type RoundAnswer, uid } from './api.js';
import { describeModes, useService } from './fixture.js';
import { markedSeconds, overRedis, pidsWithArg, startExtraCoordinator, stopGroup } from './service.js';

// API.md v1.3 "Rounds that outlive their request": Prefer: respond-async, GET .../rounds/{round}
// with its states, wait and format views, Idempotency-Key, tenants, retention, a cancel, and a
// round whose accepting coordinator is SIGKILLed, against the real processes of each mode.

/** Short, so the retention test sees a 404 soon; every other test reads its rounds well within it. */
const RETENTION_MS = 6_000;
const TOKENS = {
  a: { token: 'async-tok-a-backend-0123456789', name: 'a-backend', tenant: 'ta', role: 'backend' },
  b: { token: 'async-tok-b-backend-0123456789', name: 'b-backend', tenant: 'tb', role: 'backend' },
} as const;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'td-async-tokens-')), 'tokens.json');
writeFileSync(
  TOKENS_FILE,
  JSON.stringify({
    tokens: Object.values(TOKENS).map(({ token, name, tenant, role }) => ({ name, sha256: sha(token), tenant, role })),
  }),
);
const ASYNC = { prefer: 'respond-async' };
const sleepCmd = (seconds: number, id = uid('c')): Call =>
  direct('run_command', { command: `sleep ${seconds}; echo slept` }, id);

/** A round's answer without what differs between two runs of the same calls. */
function stable(body: RoundAnswer) {
  return body.results.map(({ durationMs: _d, idempotencyKey: _k, ranOn: _r, approval, ...rest }) => ({
    ...rest,
    ...(approval ? { approval: { by: approval.by } } : {}),
  }));
}

describeModes('async rounds', (mode) => {
  const f = useService(mode, { env: { TD_API_TOKENS: TOKENS_FILE, TD_ROUND_RETENTION_MS: String(RETENTION_MS) } });
  const as = (who: keyof typeof TOKENS = 'a', base = f.service.base) => new Api(base, TOKENS[who].token);
  const session = (extra: Record<string, unknown> = { autoApprove: 'all' }) =>
    as().session(['run_command', 'ask_user', 'calculate'], { provider: 'claude-code', ...extra });
  const get = (s: string, run: string, round: string, query = '', api = as()) =>
    api.request(
      'GET',
      `/v1/sessions/${s}/runs/${run}/rounds/${round}${query ? `?${query}` : ''}`,
      undefined,
      {},
      90_000,
    );
  const accepted = (r: Answer) => {
    expect(r.status, r.text).toBe(202);
    expect(r.json).toEqual({ round: expect.any(String), run: expect.any(String), status: 'running' });
    return r.json.round as string;
  };
  /** GETs until `ok` holds (states move on as the round goes). */
  async function untilRound(s: string, run: string, round: string, ok: (r: Answer) => boolean, what: string) {
    let last: Answer | undefined;
    return await until(
      async () => {
        last = await get(s, run, round);
        return ok(last) ? last : undefined;
      },
      { what: () => `round ${round} ${what} (last ${last?.status} ${last?.text})`, intervalMs: 50 },
    );
  }
  const stateOf = (r: Answer, i: number) => (r.status === 202 ? r.json.calls?.[i]?.state : undefined);

  it('answers 202 with Location at once and 200 later with the answer a waiting POST gives', async () => {
    const s = await session();
    const run = uid('run');
    const calls = [sleepCmd(2), direct('calculate', { expression: '6*7' })];
    const key = uid('k');
    const posted = await as().postRound(s, run, calls, { headers: { ...ASYNC, 'idempotency-key': key } });
    const round = accepted(posted);
    expect(posted.headers.get('location')).toBe(`/v1/sessions/${s}/runs/${run}/rounds/${round}`);
    const running = await untilRound(s, run, round, (r) => stateOf(r, 0) === 'running', 'ran its command');
    expect(running.json).toMatchObject({ round, run, status: 'running' });
    expect(running.json.calls.map((c: { id: string; name: string }) => [c.id, c.name])).toEqual([
      [calls[0]?.id, 'run_command'],
      [calls[1]?.id, 'calculate'],
    ]);
    // A retry under the key while it runs: the same round, 202 again.
    expect(accepted(await as().postRound(s, run, calls, { headers: { ...ASYNC, 'idempotency-key': key } }))).toBe(
      round,
    );
    const done = await get(s, run, round, 'wait=60000');
    expect(done.status, done.text).toBe(200);
    expect(done.json.round).toBe(round);
    expect(done.json.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'ok']);
    expect(done.json.results[0].output.stdout).toBe('slept\n');
    // The same stored answer every time: a waiting retry, an async retry, another GET.
    const waited = await as().round(s, run, calls, { headers: { 'idempotency-key': key } });
    expect(waited).toEqual(done.json);
    const asyncAgain = await as().postRound(s, run, calls, { headers: { ...ASYNC, 'idempotency-key': key } });
    expect([asyncAgain.status, asyncAgain.json]).toEqual([200, done.json]);
    expect((await get(s, run, round)).json).toEqual(done.json);
    // The same calls waited for in another run answer alike (but for what differs per run).
    const fresh = await as().round(s, uid('run'), calls);
    expect(stable(fresh)).toEqual(stable(done.json));
  }, 120_000);

  it('emits the same events for a handed-over round as for a waiting one, round.started to round.completed', async () => {
    const s = await session();
    const tap = await as().events(s);
    try {
      const calls = () => [direct('calculate', { expression: '6*7' }), sleepCmd(1)];
      const waited = (await as().round(s, uid('run'), calls())).round;
      const handed = accepted(await as().postRound(s, uid('run'), calls(), { headers: ASYNC }));
      const of = (round: string) => tap.events.filter((e) => e.data?.round === round).map((e) => e.name);
      await tap.waitFor(() => of(handed).includes('round.completed'), 60_000);
      await tap.waitFor(() => of(waited).includes('round.completed'), 60_000);
      for (const names of [of(waited), of(handed)]) {
        expect(names[0]).toBe('round.started');
        expect(names.at(-1)).toBe('round.completed');
      }
      expect([...of(handed)].sort()).toEqual([...of(waited)].sort());
      expect(of(handed).filter((n) => n === 'tool.result')).toHaveLength(2);
    } finally {
      tap.close();
    }
  }, 120_000);

  it('holds a wait until the round commits: woken by the commit, not by the wait running out', async () => {
    const s = await session();
    const run = uid('run');
    const runB = uid('run');
    const a = accepted(await as().postRound(s, run, [sleepCmd(2)], { headers: ASYNC }));
    // A longer round beside it, still running when the first one's commit ends the wait.
    const b = accepted(await as().postRound(s, runB, [sleepCmd(8)], { headers: ASYNC }));
    const waiting = get(s, run, a, 'wait=60000');
    expect((await get(s, run, a)).status).toBe(202); // still running while the wait holds
    const done = await waiting;
    expect(done.status, done.text).toBe(200);
    expect(done.json.results[0]).toMatchObject({ status: 'ok', output: { stdout: 'slept\n' } });
    expect((await get(s, runB, b)).status).toBe(202);
    expect((await get(s, runB, b, 'wait=60000')).status).toBe(200);
  }, 120_000);

  it('says waiting_for_approval at the gate, then done once approved through the API', async () => {
    const s = await session({});
    const run = uid('run');
    const round = accepted(
      await as().postRound(s, run, [direct('run_command', { command: 'echo approved' })], { headers: ASYNC }),
    );
    await untilRound(s, run, round, (r) => stateOf(r, 0) === 'waiting_for_approval', 'waited for approval');
    const [c] = await as().waitPending(s, 1);
    expect((await as().answer(s, c?.confirmationId ?? '', { approve: true })).status).toBe(200);
    const done = await get(s, run, round, 'wait=60000');
    expect(done.status, done.text).toBe(200);
    expect(done.json.results[0]).toMatchObject({ status: 'ok', output: { stdout: 'approved\n' } });
  }, 120_000);

  it('says waiting_for_input for ask_user, then done once answered through the API', async () => {
    const s = await session();
    const run = uid('run');
    const round = accepted(
      await as().postRound(s, run, [direct('ask_user', { question: 'Colour?' })], { headers: ASYNC }),
    );
    await untilRound(s, run, round, (r) => stateOf(r, 0) === 'waiting_for_input', 'waited for input');
    const inputs = (await as().request('GET', `/v1/sessions/${s}/inputs`)).json.inputs;
    const answered = await as().request('POST', `/v1/sessions/${s}/inputs/${inputs[0].inputId}`, { output: 'teal' });
    expect(answered.status, answered.text).toBe(200);
    const done = await get(s, run, round, 'wait=60000');
    expect(done.status, done.text).toBe(200);
    expect(done.json.results[0]).toMatchObject({ status: 'ok', output: { answer: 'teal' } });
  }, 120_000);

  it('serves every format view exactly as the POST under the same key answers it', async () => {
    const s = await session();
    const run = uid('run');
    const calls = [
      direct('calculate', { expression: '2+2' }),
      { type: 'text', text: 'thinking aloud' } as unknown as Call,
    ];
    const key = uid('k');
    const round = (await as().postRound(s, run, calls, { headers: { ...ASYNC, 'idempotency-key': key } })).json.round;
    for (const format of ['openai', 'anthropic', 'openai-responses']) {
      const viaGet = await get(s, run, round, `format=${format}&wait=60000`);
      expect(viaGet.status, viaGet.text).toBe(200);
      const viaPost = await as().postRound(s, run, calls, {
        query: `format=${format}`,
        headers: { 'idempotency-key': key },
      });
      expect(viaGet.json).toEqual(viaPost.json);
    }
    const anthropic = (await get(s, run, round, 'format=anthropic')).json;
    // The text block needs no answer: one tool_result, for the calculate call.
    expect(anthropic.content).toHaveLength(1);
  }, 120_000);

  it('a cancel (DELETE the run) ends the running round: its answer has the call cancelled, its command’s process gone', async () => {
    const s = await session();
    const run = uid('run');
    const marked = markedSeconds(60);
    const round = accepted(
      await as().postRound(s, run, [direct('run_command', { command: `sleep ${marked}; echo slept` })], {
        headers: ASYNC,
      }),
    );
    await untilRound(s, run, round, (r) => stateOf(r, 0) === 'running', 'ran its command');
    await until(async () => (pidsWithArg(marked).length > 0 ? true : undefined), { what: 'the command’s sleep' });
    const cancelled = await as().request('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(cancelled.status, cancelled.text).toBe(200);
    const done = await get(s, run, round, 'wait=60000');
    expect(done.status, done.text).toBe(200);
    expect(done.json.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    await until(async () => (pidsWithArg(marked).length === 0 ? true : undefined), {
      what: 'the command’s sleep gone',
    });
  }, 120_000);

  it('404 for an unknown round and for another tenant’s session; 400 naming wait for a bad wait', async () => {
    const s = await session();
    const run = uid('run');
    const round = (await as().round(s, run, [direct('calculate', { expression: '1' })])).round;
    expect((await get(s, run, round)).status).toBe(200);
    const unknown = await get(s, run, 'rnd_unknown');
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'round_not_found']);
    expect((await get(s, uid('other-run'), round)).status).toBe(404);
    const other = await get(s, run, round, '', as('b'));
    expect([other.status, other.json.error.code]).toEqual([404, 'session_not_found']);
    for (const bad of ['-1', '60001', 'soon', '1.5']) {
      const r = await get(s, run, round, `wait=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.json.error.message).toMatch(/\bwait\b/);
    }
  }, 120_000);

  it('forgets a finished round after TD_ROUND_RETENTION_MS: 404, and its key begins a new round', async () => {
    const s = await session();
    const run = uid('run');
    const key = uid('k');
    const calls = [direct('calculate', { expression: '3*3' })];
    const first = await as().round(s, run, calls, { headers: { 'idempotency-key': key } });
    expect((await get(s, run, first.round)).status).toBe(200);
    await untilRound(s, run, first.round, (r) => r.status === 404, 'was forgotten');
    const again = await as().round(s, run, calls, { headers: { 'idempotency-key': key } });
    expect(again.round).not.toBe(first.round);
  }, 120_000);

  if (overRedis(mode)) {
    it('a wait on one coordinator is woken by the commit of the round another coordinator runs', async () => {
      const second = await startExtraCoordinator(f.service, 'coordinator-async-wait');
      try {
        const s = await session();
        const run = uid('run');
        const round = accepted(await as('a', second.base).postRound(s, run, [sleepCmd(3)], { headers: ASYNC }));
        await untilRound(s, run, round, (r) => stateOf(r, 0) === 'running', 'ran its command');
        // Unwoken, this wait would run its whole minute and answer 202.
        const done = await get(s, run, round, 'wait=60000');
        expect(done.status, done.text).toBe(200);
        expect(done.json.results[0]).toMatchObject({ status: 'ok', output: { stdout: 'slept\n' } });
        expect((await get(s, run, round, '', as('a', second.base))).json).toEqual(done.json);
      } finally {
        await stopGroup(second.group);
      }
    }, 180_000);

    it('the accepting coordinator SIGKILLed mid-round: another finishes it, and any coordinator answers 200, the same every time', async () => {
      const second = await startExtraCoordinator(f.service, 'coordinator-async');
      try {
        const s = await session();
        const run = uid('run');
        const calls = [sleepCmd(3)];
        const headers = { ...ASYNC, 'idempotency-key': uid('k') };
        const round = accepted(await as('a', second.base).postRound(s, run, calls, { headers }));
        // Running on the accepting coordinator, seen from the other one; a retry there is the same round.
        await untilRound(s, run, round, (r) => stateOf(r, 0) === 'running', 'ran its command');
        expect(accepted(await as().postRound(s, run, calls, { headers }))).toBe(round);
        second.group.signal('SIGKILL');
        await second.group.exited;
        let done: Answer | undefined;
        for (let i = 0; i < 10 && done?.status !== 200; i++) done = await get(s, run, round, 'wait=60000');
        expect(done?.status, done?.text).toBe(200);
        expect(done?.json.results[0]).toMatchObject({ status: 'ok', output: { stdout: 'slept\n' } });
        expect((await get(s, run, round)).json).toEqual(done?.json);
        // The retry under the key after it: the same stored answer, async or waiting.
        const again = await as().postRound(s, run, calls, { headers });
        expect([again.status, again.json]).toEqual([200, done?.json]);
        expect(await as().round(s, run, calls, { headers: { 'idempotency-key': headers['idempotency-key'] } })).toEqual(
          done?.json,
        );
      } finally {
        await stopGroup(second.group);
      }
    }, 180_000);
  }
});
