import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSchemas, type Harness, putSession, rt, sleep, startHarness, tapEvents, uid } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function twoSessions() {
  const a = uid('sa');
  const b = uid('sb');
  for (const s of [a, b]) {
    await putSession(h, s);
    await fetchSchemas(h, s, ['run_command', 'calculate']);
  }
  return [a, b] as const;
}

async function pendingOf(s: string, n: number) {
  for (let i = 0; i < 250; i++) {
    const r = await h.api('GET', `/v1/sessions/${s}/confirmations`);
    if (r.json.confirmations.length >= n) return r.json.confirmations;
    await sleep(20);
  }
  throw new Error(`fewer than ${n} pending confirmations in ${s}`);
}

const submit = (s: string, run: string, calls: unknown[]) =>
  h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls });

describe('when two sessions use the same run and call ids', () => {
  it('answers a bare callId in its own session only, without calling it ambiguous', async () => {
    const [a, b] = await twoSessions();
    const ra = submit(a, 'run-1', [rt('run_command', { command: 'true' }, 'same-call')]);
    const rb = submit(b, 'run-1', [rt('run_command', { command: 'true' }, 'same-call')]);
    await pendingOf(a, 1);
    await pendingOf(b, 1);
    const answer = await h.api('POST', `/v1/sessions/${a}/confirmations/same-call`, { approve: true });
    expect(answer.status).toBe(200);
    expect((await ra).json.results[0].status).toBe('ok');
    expect(await pendingOf(b, 1)).toHaveLength(1);
    await h.api('POST', `/v1/sessions/${b}/confirmations/same-call`, { approve: false });
    expect((await rb).json.results[0].status).toBe('denied');
  });

  it('does not answer another session’s confirmation by its confirmationId', async () => {
    const [a, b] = await twoSessions();
    const rb = submit(b, 'run-1', [rt('run_command', { command: 'true' })]);
    const [c] = await pendingOf(b, 1);
    const wrong = await h.api('POST', `/v1/sessions/${a}/confirmations/${c.confirmationId}`, { approve: true });
    expect(wrong.status).toBe(404);
    expect(await pendingOf(b, 1)).toHaveLength(1);
    await h.api('POST', `/v1/sessions/${b}/confirmations/${c.confirmationId}`, { approve: false });
    await rb;
  });

  it('remembers an approval for its own session only', async () => {
    const [a, b] = await twoSessions();
    const ra = submit(a, 'run-1', [rt('run_command', { command: 'true' })]);
    const rb = submit(b, 'run-1', [rt('run_command', { command: 'true' })]);
    const [ca] = await pendingOf(a, 1);
    await pendingOf(b, 1);
    await h.api('POST', `/v1/sessions/${a}/confirmations/${ca.confirmationId}`, { approve: true, remember: true });
    expect((await ra).json.results[0].status).toBe('ok');
    await sleep(100);
    const [cb] = await pendingOf(b, 1);
    await h.api('POST', `/v1/sessions/${b}/confirmations/${cb.confirmationId}`, { approve: false });
    expect((await rb).json.results[0].status).toBe('denied');
  });

  it('cancels the run of its own session only', async () => {
    const [a, b] = await twoSessions();
    const ra = submit(a, 'run-1', [rt('run_command', { command: 'true' })]);
    const rb = submit(b, 'run-1', [rt('run_command', { command: 'true' })]);
    await pendingOf(a, 1);
    await pendingOf(b, 1);
    expect((await h.api('DELETE', `/v1/sessions/${a}/runs/run-1`)).json).toEqual({ cancelled: 1 });
    expect((await ra).json.results[0].error.code).toBe('cancelled');
    const [cb] = await pendingOf(b, 1);
    await h.api('POST', `/v1/sessions/${b}/confirmations/${cb.confirmationId}`, { approve: true });
    expect((await rb).json.results[0].status).toBe('ok');
  });

  it('keeps histories, idempotency keys and event streams apart', async () => {
    const [a, b] = await twoSessions();
    const tapB = await tapEvents(h, b);
    const key = { 'idempotency-key': 'shared-key' };
    const calls = (expression: string) => ({ calls: [rt('calculate', { expression }, 'calc')] });
    const first = await h.api('POST', `/v1/sessions/${a}/runs/run-1/rounds`, calls('1+1'), key);
    const second = await h.api('POST', `/v1/sessions/${b}/runs/run-1/rounds`, calls('2+2'), key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.json.round).not.toBe(first.json.round);
    expect(second.json.results[0].output).toEqual({ value: 4 });
    const historyA = (await h.api('GET', `/v1/sessions/${a}/history?tool=calculate`)).json.results;
    expect(historyA.map((e: { round: string }) => e.round)).toEqual([first.json.round]);
    await tapB.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    tapB.close();
    expect(tapB.events.every((e) => e.data.round === second.json.round)).toBe(true);
  });
});
