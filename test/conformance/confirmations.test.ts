import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { type RoundAnswer, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';
import { sleep } from './service.js';

// DESIGN.md pass 1 step 8 and API.md's confirmation endpoints.
describeModes('confirmations', (mode) => {
  const f = useService(mode);
  const TOOLS = ['run_command', 'edit_file', 'http_request', 'calculate', 'read_files'];
  const session = (body: Record<string, unknown> = {}) => f.api.session(TOOLS, { provider: 'openai', ...body });
  const exists = (s: string, rel: string) => existsSync(path.join(f.service.workspace(s), rel));
  /** Posts a round and keeps the promise (no unhandled rejection while the test waits). */
  const start = (s: string, run: string, calls: ReturnType<typeof rt>[]) => {
    const p = f.api.round(s, run, calls);
    p.catch(() => undefined);
    return p;
  };

  it('asks every confirmation of a round at once and runs nothing until all are answered', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    const tag = tagOf('all');
    const run = uid('run');
    const calls = [
      rt('run_command', { command: 'touch c1.txt' }),
      rt('calculate', { expression: '2*21' }),
      rt('edit_file', { path: 'c2.txt', content: 'x' }),
      rt('http_request', { url: f.target.url('echo', tag), method: 'POST', body: 'b' }),
      rt('run_command', { command: 'touch c3.txt' }),
    ];
    const pending = start(s, run, calls);
    const asked = await tap.waitFor((es) => {
      const c = es.filter((e) => e.name === 'confirm.requested');
      return c.length >= 4 && c;
    });
    const list = await f.api.waitPending(s, 4);
    expect(list.map((c) => c.callId).sort()).toEqual([calls[0], calls[2], calls[3], calls[4]].map((c) => c?.id).sort());
    expect(new Set(list.map((c) => c.confirmationId)).size).toBe(4);
    expect(asked.map((e) => e.data.confirmationId).sort()).toEqual(list.map((c) => c.confirmationId).sort());
    for (const c of list) {
      expect(c).toMatchObject({ round: asked[0]?.data.round, run });
      const inner = calls.find((x) => x.id === c.callId)?.args as { name: string; args: unknown } | undefined;
      expect(c.name).toBe(inner?.name);
      expect(c.args).toEqual(inner?.args);
    }
    for (const c of list.slice(0, 3)) {
      expect((await f.api.answer(s, c.confirmationId, { approve: true })).status).toBe(200);
      await sleep(100);
      expect(tap.named('tool.result'), 'a call ran before every confirmation was answered').toHaveLength(0);
      expect(exists(s, 'c1.txt') || exists(s, 'c2.txt') || exists(s, 'c3.txt')).toBe(false);
      expect(f.target.tag(tag).hits).toBe(0);
    }
    expect((await f.api.answer(s, list[3]?.confirmationId ?? '', { approve: true })).status).toBe(200);
    const b = await pending;
    expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(b.results[1]?.output).toEqual({ value: 42 });
    expect(exists(s, 'c1.txt') && exists(s, 'c2.txt') && exists(s, 'c3.txt')).toBe(true);
    expect(await f.api.pending(s)).toEqual([]);
    tap.close();
  });

  it('gives every confirmation its own id, unique across rounds', async () => {
    const s = await session();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const pending = start(s, uid('run'), [
        rt('run_command', { command: 'true' }),
        rt('run_command', { command: ':' }),
      ]);
      const list = await f.api.waitPending(s, 2);
      for (const c of list) {
        ids.push(c.confirmationId);
        await f.api.answer(s, c.confirmationId, { approve: true });
      }
      await pending;
    }
    expect(new Set(ids).size).toBe(6);
  });

  it('ends a denied call denied (error.code denied, a message for the model) and runs its approved siblings', async () => {
    const s = await session();
    const calls = [rt('run_command', { command: 'touch denied.txt' }), rt('run_command', { command: 'touch ok.txt' })];
    const pending = start(s, uid('run'), calls);
    const list = await f.api.waitPending(s, 2);
    const byCall = (id: string | undefined) => list.find((c) => c.callId === id)?.confirmationId ?? '';
    expect((await f.api.answer(s, byCall(calls[0]?.id), { approve: false })).status).toBe(200);
    expect((await f.api.answer(s, byCall(calls[1]?.id), { approve: true })).status).toBe(200);
    const [denied, ok] = (await pending).results;
    expect(denied).toMatchObject({ status: 'denied', error: { code: 'denied' } });
    expect(denied?.error?.message.length).toBeGreaterThan(10);
    expect(denied?.output).toBeUndefined();
    expect(ok?.status).toBe('ok');
    expect(exists(s, 'denied.txt')).toBe(false);
    expect(exists(s, 'ok.txt')).toBe(true);
  });

  it('remembers an approval: the tool’s other pending confirmations are approved and later calls run unasked', async () => {
    const s = await session();
    const run = uid('run');
    const calls = [
      rt('run_command', { command: 'touch r1.txt' }),
      rt('run_command', { command: 'touch r2.txt' }),
      rt('edit_file', { path: 'e.txt', content: 'x' }),
    ];
    const pending = start(s, run, calls);
    const list = await f.api.waitPending(s, 3);
    const first = list.find((c) => c.callId === calls[0]?.id);
    const a = await f.api.answer(s, first?.confirmationId ?? '', { approve: true, remember: true });
    expect(a.status, a.text).toBe(200);
    const left = await f.api.pending(s);
    expect(left.map((c) => c.name)).toEqual(['edit_file']);
    await f.api.answer(s, left[0]?.confirmationId ?? '', { approve: true });
    expect((await pending).results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    // Later rounds: run_command runs unasked, edit_file (not remembered) still asks.
    expect((await f.api.one(s, rt('run_command', { command: 'touch r3.txt' }))).status).toBe('ok');
    const next = start(s, uid('run'), [rt('edit_file', { path: 'e2.txt', content: 'y' })]);
    const asked = await f.api.waitPending(s, 1);
    expect(asked.map((c) => c.name)).toEqual(['edit_file']);
    await f.api.answer(s, asked[0]?.confirmationId ?? '', { approve: false });
    expect((await next).results[0]?.status).toBe('denied');
  });

  it('does not remember a denial sent with remember', async () => {
    const s = await session();
    const first = start(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [c] = await f.api.waitPending(s, 1);
    await f.api.answer(s, c?.confirmationId ?? '', { approve: false, remember: true });
    expect((await first).results[0]?.status).toBe('denied');
    const second = start(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [again] = await f.api.waitPending(s, 1);
    await f.api.answer(s, again?.confirmationId ?? '', { approve: true });
    expect((await second).results[0]?.status).toBe('ok');
  });

  it('accepts a bare callId when exactly one pending confirmation has it, 409 when several do', async () => {
    const s = await session();
    const solo = rt('run_command', { command: 'true' });
    const one = start(s, uid('run'), [solo]);
    await f.api.waitPending(s, 1);
    expect((await f.api.answer(s, solo.id, { approve: true })).status).toBe(200);
    expect((await one).results[0]?.status).toBe('ok');

    const shared = uid('same');
    const r1 = start(s, uid('run'), [rt('run_command', { command: 'true' }, shared)]);
    const r2 = start(s, uid('run'), [rt('run_command', { command: 'true' }, shared)]);
    const list = await f.api.waitPending(s, 2);
    const ambiguous = await f.api.answer(s, shared, { approve: true });
    expect(ambiguous.status, ambiguous.text).toBe(409);
    expect(typeof ambiguous.json?.error?.code).toBe('string');
    expect(await f.api.pending(s)).toHaveLength(2);
    for (const c of list) expect((await f.api.answer(s, c.confirmationId, { approve: true })).status).toBe(200);
    for (const b of await Promise.all([r1, r2])) expect(b.results[0]?.status).toBe('ok');
  });

  it('answers 404 for an id with nothing pending, including a confirmation already answered', async () => {
    const s = await session();
    const pending = start(s, uid('run'), [rt('run_command', { command: 'true' })]);
    const [c] = await f.api.waitPending(s, 1);
    expect((await f.api.answer(s, c?.confirmationId ?? '', { approve: true })).status).toBe(200);
    await pending;
    const again = await f.api.answer(s, c?.confirmationId ?? '', { approve: true });
    expect(again.status).toBe(404);
    expect(typeof again.json?.error?.message).toBe('string');
    expect((await f.api.answer(s, uid('nothing'), { approve: false })).status).toBe(404);
    const bad = await f.api.request('POST', `/v1/sessions/${s}/confirmations/${uid('x')}`, { approve: 'yes' });
    expect(bad.status).toBe(400);
  });

  it('asks nothing for auto-approved tools: a list of names, or "all"', async () => {
    const listed = await session({ autoApprove: ['run_command'] });
    const b = await f.api.round(listed, uid('run'), [rt('run_command', { command: 'echo hi' })]);
    expect(b.results[0]?.status).toBe('ok');
    const pending = start(listed, uid('run'), [rt('edit_file', { path: 'x.txt', content: 'x' })]);
    const [c] = await f.api.waitPending(listed, 1);
    expect(c?.name).toBe('edit_file');
    await f.api.answer(listed, c?.confirmationId ?? '', { approve: true });
    await pending;

    const all = await session({ autoApprove: 'all' });
    const tag = tagOf('auto');
    const r = await f.api.round(all, uid('run'), [
      rt('run_command', { command: 'true' }),
      rt('edit_file', { path: 'y.txt', content: 'y' }),
      rt('http_request', { url: f.target.url('echo', tag), method: 'DELETE' }),
    ]);
    expect(r.results.map((x) => x.status)).toEqual(['ok', 'ok', 'ok']);
  });

  it('asks for http_request only when the method is not GET', async () => {
    const s = await session();
    const tag = tagOf('methods');
    const get = await f.api.round(s, uid('run'), [
      rt('http_request', { url: f.target.url('echo', tag, 0) }),
      rt('http_request', { url: f.target.url('echo', tag, 1), method: 'get' }),
    ]);
    expect(get.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    const calls = ['POST', 'put', 'DELETE'].map((method, i) =>
      rt('http_request', { url: f.target.url('echo', tag, 10 + i), method }),
    );
    const pending = start(s, uid('run'), calls);
    const list = await f.api.waitPending(s, 3);
    expect(list.map((c) => c.callId).sort()).toEqual(calls.map((c) => c.id).sort());
    expect(f.target.tag(tag).hits).toBe(2);
    for (const c of list) await f.api.answer(s, c.confirmationId, { approve: true });
    expect((await pending).results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
  });

  it('never asks about a call that fails validation (it ends invalid at once)', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    const b: RoundAnswer = await f.api.round(s, uid('run'), [rt('run_command', { command: 5 }), rt('edit_file', {})]);
    expect(b.results.map((r) => r.status)).toEqual(['invalid', 'invalid']);
    await tap.waitFor((es) => es.some((e) => e.name === 'round.completed' && e.data.round === b.round));
    expect(tap.named('confirm.requested')).toHaveLength(0);
    tap.close();
  });

  it('ends calls awaiting approval cancelled when their run is cancelled, and clears them from the list', async () => {
    const s = await session();
    const run = uid('run');
    const pending = start(s, run, [
      rt('run_command', { command: 'touch never.txt' }),
      rt('calculate', { expression: '1' }),
    ]);
    await f.api.waitPending(s, 1);
    const del = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(del.status).toBe(200);
    const b = await pending;
    expect(b.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(del.json.cancelled).toBeGreaterThanOrEqual(1);
    expect(await f.api.pending(s)).toEqual([]);
    expect(exists(s, 'never.txt')).toBe(false);
  });
});
