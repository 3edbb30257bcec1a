import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSchemas, type Harness, putSession, rt, sleep, startHarness, tapEvents, uid } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function confirmSession(harness = h) {
  const s = uid('s');
  const state = await putSession(harness, s, { provider: 'openai' });
  await fetchSchemas(harness, s, ['run_command', 'calculate']);
  return { s, workspace: state.workspace as string };
}

function submit(s: string, run: string, calls: unknown[], harness = h) {
  return harness.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls });
}

async function pendingOf(s: string, n: number, harness = h) {
  for (let i = 0; i < 250; i++) {
    const r = await harness.api('GET', `/v1/sessions/${s}/confirmations`);
    if (r.json.confirmations.length >= n) return r.json.confirmations;
    await sleep(20);
  }
  throw new Error(`fewer than ${n} pending confirmations`);
}

const answer = (s: string, id: string, body: unknown) => h.api('POST', `/v1/sessions/${s}/confirmations/${id}`, body);
const readWs = (workspace: string, file: string) => {
  try {
    return readFileSync(path.join(workspace, file), 'utf8');
  } catch {
    return null;
  }
};

describe('GET /v1/sessions/{session}/confirmations', () => {
  it('lists each pending confirmation with confirmationId, round, run, callId, name and args', async () => {
    const { s } = await confirmSession();
    const run = uid('run');
    const call = rt('run_command', { command: 'printf a > list.txt' });
    const pending = submit(s, run, [call]);
    const [c] = await pendingOf(s, 1);
    expect(c).toMatchObject({ run, callId: call.id, name: 'run_command', args: { command: 'printf a > list.txt' } });
    expect(typeof c.confirmationId).toBe('string');
    expect(typeof c.round).toBe('string');
    await answer(s, c.confirmationId, { approve: false });
    await pending;
  });

  it('asks for all of a round’s confirmations at once, before anything runs', async () => {
    const { s, workspace } = await confirmSession();
    const calls = [
      rt('run_command', { command: 'printf 1 > one.txt' }),
      rt('run_command', { command: 'printf 2 > two.txt' }),
    ];
    const pending = submit(s, uid('run'), calls);
    const listed = await pendingOf(s, 2);
    expect(listed.map((c: { callId: string }) => c.callId)).toEqual(calls.map((c) => c.id));
    expect(new Set(listed.map((c: { confirmationId: string }) => c.confirmationId)).size).toBe(2);
    expect(readWs(workspace, 'one.txt')).toBeNull();
    await answer(s, listed[0].confirmationId, { approve: true });
    await sleep(100);
    expect(readWs(workspace, 'one.txt')).toBeNull();
    await answer(s, listed[1].confirmationId, { approve: true });
    const b = (await pending).json;
    expect(b.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'ok']);
    expect(readWs(workspace, 'two.txt')).toBe('2');
  });

  it('answers 404 for an unknown session', async () => {
    expect((await h.api('GET', `/v1/sessions/${uid('none')}/confirmations`)).status).toBe(404);
  });
});

describe('POST /v1/sessions/{session}/confirmations/{id}', () => {
  it('runs the call once approved, and answers 404 to a second answer', async () => {
    const { s, workspace } = await confirmSession();
    const pending = submit(s, uid('run'), [rt('run_command', { command: 'printf x > c.txt' })]);
    const [c] = await pendingOf(s, 1);
    expect(readWs(workspace, 'c.txt')).toBeNull();
    const r = await answer(s, c.confirmationId, { approve: true });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      confirmation: { confirmationId: c.confirmationId },
      approve: true,
      remember: false,
    });
    const b = (await pending).json;
    expect(b.results[0].status).toBe('ok');
    expect(readWs(workspace, 'c.txt')).toBe('x');
    const again = await answer(s, c.confirmationId, { approve: true });
    expect(again.status).toBe(404);
    expect(again.json.error.code).toBe('confirmation_not_found');
  });

  it('answers a denied call denied, and never runs it', async () => {
    const { s, workspace } = await confirmSession();
    const pending = submit(s, uid('run'), [rt('run_command', { command: 'printf x > denied.txt' })]);
    const [c] = await pendingOf(s, 1);
    expect((await answer(s, c.confirmationId, { approve: false })).status).toBe(200);
    const b = (await pending).json;
    expect(b.results[0]).toMatchObject({ status: 'denied', error: { code: 'denied' } });
    expect(typeof b.results[0].error.message).toBe('string');
    expect(readWs(workspace, 'denied.txt')).toBeNull();
  });

  it('accepts the bare callId when one pending confirmation has it', async () => {
    const { s } = await confirmSession();
    const call = rt('run_command', { command: 'true' });
    const pending = submit(s, uid('run'), [call]);
    await pendingOf(s, 1);
    expect((await answer(s, call.id, { approve: true })).status).toBe(200);
    expect((await pending).json.results[0].status).toBe('ok');
  });

  it('answers 409 for a callId several pending confirmations have; their confirmationIds still work', async () => {
    const { s } = await confirmSession();
    const a = submit(s, uid('run'), [rt('run_command', { command: 'true' }, 'dup-call')]);
    const b = submit(s, uid('run'), [rt('run_command', { command: 'true' }, 'dup-call')]);
    const listed = await pendingOf(s, 2);
    const r = await answer(s, 'dup-call', { approve: true });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('confirmation_ambiguous');
    expect((await h.api('GET', `/v1/sessions/${s}/confirmations`)).json.confirmations).toHaveLength(2);
    for (const c of listed) expect((await answer(s, c.confirmationId, { approve: false })).status).toBe(200);
    expect((await a).json.results[0].status).toBe('denied');
    expect((await b).json.results[0].status).toBe('denied');
  });

  it('with remember, approves the other pending confirmations of the tool and auto-approves later calls', async () => {
    const { s } = await confirmSession();
    const one = submit(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const two = submit(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const listed = await pendingOf(s, 2);
    const r = await answer(s, listed[0].confirmationId, { approve: true, remember: true });
    expect(r.status).toBe(200);
    expect(r.json.remember).toBe(true);
    expect((await one).json.results[0].status).toBe('ok');
    expect((await two).json.results[0].status).toBe('ok');
    expect((await h.api('GET', `/v1/sessions/${s}/confirmations`)).json.confirmations).toEqual([]);

    const tap = await tapEvents(h, s);
    const later = (await submit(s, uid('run'), [rt('run_command', { command: 'true' })])).json;
    await tap.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    tap.close();
    expect(later.results[0].status).toBe('ok');
    expect(tap.events.some((e) => e.name === 'confirm.requested')).toBe(false);
  });

  it('ignores remember on a denial', async () => {
    const { s } = await confirmSession();
    const first = submit(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [c] = await pendingOf(s, 1);
    const r = await answer(s, c.confirmationId, { approve: false, remember: true });
    expect(r.json.remember).toBe(false);
    expect((await first).json.results[0].status).toBe('denied');
    const again = submit(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [next] = await pendingOf(s, 1);
    await answer(s, next.confirmationId, { approve: true });
    expect((await again).json.results[0].status).toBe('ok');
  });

  it('answers 400 for a body without a boolean approve or a bad id, changing nothing', async () => {
    const { s } = await confirmSession();
    const pending = submit(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [c] = await pendingOf(s, 1);
    for (const body of [{}, { approve: 'yes' }, { approve: true, remember: 'always' }, 'not json']) {
      const r = await answer(s, c.confirmationId, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(typeof r.json.error.message).toBe('string');
    }
    expect((await answer(s, 'bad%20id', { approve: true })).status).toBe(400);
    expect(await pendingOf(s, 1)).toHaveLength(1);
    await answer(s, c.confirmationId, { approve: false });
    await pending;
  });

  it('answers 404 for an id nothing is pending under, and for an unknown session', async () => {
    const { s } = await confirmSession();
    expect((await answer(s, 'cf_nothing', { approve: true })).status).toBe(404);
    expect((await answer(uid('none'), 'cf_nothing', { approve: true })).status).toBe(404);
  });
});

describe('when nobody answers before TD_CONFIRM_TIMEOUT_MS', () => {
  it('answers the call denied', async () => {
    const quick = await startHarness({ config: { confirmTimeoutMs: 300 } });
    try {
      const { s, workspace } = await confirmSession(quick);
      const started = Date.now();
      const r = await submit(s, uid('run'), [rt('run_command', { command: 'printf t > late.txt' })], quick);
      expect(r.status).toBe(200);
      expect(r.json.results[0]).toMatchObject({ status: 'denied', error: { code: 'denied' } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(readWs(workspace, 'late.txt')).toBeNull();
      expect((await quick.api('GET', `/v1/sessions/${s}/confirmations`)).json.confirmations).toEqual([]);
    } finally {
      await quick.close();
    }
  });
});
