import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Call, httpBody, type Result, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';
import { markedSeconds, pidsWithArg, sleep } from './service.js';

/** A command printing its start and end (epoch ms) around a sleep. */
const timed = (seconds: number) => ({
  command: `s=$(date +%s%3N); sleep ${seconds}; e=$(date +%s%3N); printf '%s %s' "$s" "$e"`,
});
const span = (r: Result | undefined) => {
  const [start, end] = String(r?.output?.stdout ?? '')
    .split(' ')
    .map(Number);
  if (!start || !end) throw new Error(`no timestamps in ${JSON.stringify(r)}`);
  return { start, end };
};

async function waitUntil(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what} (waited ${ms} ms)`);
    await sleep(20);
  }
}

// DESIGN.md pass 2: order kept, ≤ MAX_CONCURRENT_TOOLS per run, serial calls alone, failures
// isolated, sessions independent; API.md: Idempotency-Key and DELETE run.
describeModes('execution, retries and cancellation', (mode) => {
  const f = useService(mode);
  const TOOLS = ['run_command', 'http_request', 'calculate', 'fetch_page', 'read_files', 'edit_file'];
  const session = () => f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
  const ws = (s: string, rel: string) => path.join(f.service.workspace(s), rel);

  describe('two sessions', () => {
    it('run their serial tools at the same time: neither waits for the other', async () => {
      const [a, b] = await Promise.all([session(), session()]);
      const [ra, rb] = await Promise.all([
        f.api.one(a, rt('run_command', timed(1))),
        f.api.one(b, rt('run_command', timed(1))),
      ]);
      const x = span(ra);
      const y = span(rb);
      expect(x.start < y.end && y.start < x.end, `serial calls did not overlap: ${JSON.stringify([x, y])}`).toBe(true);
    });

    it('finish a short serial call while another session’s long one still runs', async () => {
      const [a, b] = await Promise.all([session(), session()]);
      let longDone = false;
      const long = f.api.one(a, rt('run_command', timed(2))).finally(() => {
        longDone = true;
      });
      await sleep(300);
      const short = await f.api.one(b, rt('run_command', { command: 'echo quick' }));
      expect(short.status).toBe('ok');
      expect(longDone, 'the short serial call waited for the other session’s long one').toBe(false);
      expect((await long).status).toBe('ok');
    });
  });

  describe('within a round', () => {
    it('runs serial calls one at a time in call order', async () => {
      const s = await session();
      const b = await f.api.round(s, uid('run'), [
        rt('run_command', { command: 'printf a >> log.txt; sleep 0.3; printf A >> log.txt' }),
        rt('run_command', { command: 'printf b >> log.txt' }),
        rt('edit_file', { path: 'log.txt', old: 'b', new: 'b!' }),
        rt('read_files', { paths: ['log.txt'] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
      expect(b.results[3]?.output.files[0].content).toBe('aAb!');
    });

    it('finishes everything before a serial call before it starts, and starts nothing after it until it ends', async () => {
      const s = await session();
      const tag = tagOf('order');
      const slow = (n: number) => rt('http_request', { url: f.target.url('slow', tag, n, { ms: '300' }) });
      const b = await f.api.round(s, uid('run'), [slow(0), slow(1), rt('run_command', timed(0.3)), slow(2), slow(3)]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
      const reqs = f.target.tag(tag).requests;
      const at = (n: number) => reqs.find((q) => q.path.endsWith(`/${n}`));
      const cmd = span(b.results[2]);
      expect(cmd.start).toBeGreaterThanOrEqual(Math.max(at(0)?.end ?? 0, at(1)?.end ?? 0));
      expect(Math.min(at(2)?.start ?? 0, at(3)?.start ?? 0)).toBeGreaterThanOrEqual(cmd.end);
      // The two calls of each batch ran side by side.
      expect(f.target.tag(tag).maxInFlight).toBe(2);
    });

    it('keeps at most 5 concurrent calls of a run in flight, and answers each with its own output', async () => {
      const s = await session();
      const tag = tagOf('limit');
      const calls = Array.from({ length: 12 }, (_, i) =>
        rt('http_request', { url: f.target.url('slow', tag, i, { ms: '300' }) }),
      );
      const b = await f.api.round(s, uid('run'), calls);
      b.results.forEach((r, i) => {
        expect(r.status).toBe('ok');
        expect(httpBody(r).id).toBe(`${tag}/${i}`);
      });
      expect(f.target.tag(tag).hits).toBe(12);
      expect(f.target.tag(tag).maxInFlight).toBe(5);
    });

    it('applies the limit per run: two runs of a session each get their own 5', async () => {
      const s = await session();
      const tags = [tagOf('runA'), tagOf('runB')];
      const both = `${tags[0]}|${tags[1]}`;
      let inFlight = 0;
      let most = 0;
      const before = f.target.requests.length;
      const answers = await Promise.all(
        tags.map((tag) =>
          f.api.round(
            s,
            uid('run'),
            Array.from({ length: 7 }, (_, i) =>
              rt('http_request', { url: f.target.url('slow', tag, i, { ms: '500' }) }),
            ),
          ),
        ),
      );
      for (const a of answers) expect(a.results.every((r) => r.status === 'ok')).toBe(true);
      const events = f.target.requests
        .slice(before)
        .filter((q) => both.includes(q.tag))
        .flatMap((q) => [
          { t: q.start, d: 1 },
          { t: q.end ?? q.start, d: -1 },
        ])
        .sort((x, y) => x.t - y.t || x.d - y.d);
      for (const e of events) {
        inFlight += e.d;
        most = Math.max(most, inFlight);
      }
      for (const tag of tags) expect(f.target.tag(tag).maxInFlight).toBeLessThanOrEqual(5);
      expect(most).toBeGreaterThan(5);
    });

    it('never lets one failure cancel its siblings: each call gets its own outcome and message', async () => {
      const s = await session();
      const tag = tagOf('siblings');
      const b = await f.api.round(s, uid('run'), [
        rt('http_request', { url: f.target.url('reset', tag, 0) }),
        rt('http_request', { url: f.target.url('slow', tag, 1, { ms: '200' }) }),
        rt('calculate', { expression: '1 +' }),
        rt('fetch_page', { url: f.target.url('page', tag, 2) }),
        rt('run_command', { command: 'exit 2' }),
        rt('read_files', { paths: ['/abs'] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['error', 'ok', 'error', 'ok', 'ok', 'error']);
      const messages = b.results.filter((r) => r.error).map((r) => r.error?.message);
      expect(new Set(messages).size).toBe(messages.length);
    });

    it('reports how long each call ran in durationMs', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('http_request', { url: f.target.url('slow', tagOf('dur'), 0, { ms: '400' }) }));
      expect(r.durationMs).toBeGreaterThanOrEqual(350);
      expect(r.durationMs).toBeLessThan(10_000);
    });
  });

  describe('Idempotency-Key', () => {
    it('answers a retry with the first submission’s round and never runs its calls again', async () => {
      const s = await session();
      const run = uid('run');
      const key = uid('key');
      const calls = [rt('run_command', { command: 'echo ran >> count.txt' }), rt('calculate', { expression: '1+1' })];
      const first = await f.api.round(s, run, calls, { headers: { 'Idempotency-Key': key } });
      const retry = await f.api.round(s, run, calls, { headers: { 'Idempotency-Key': key } });
      expect(retry.round).toBe(first.round);
      expect(retry.results).toEqual(first.results);
      expect(readFileSync(ws(s, 'count.txt'), 'utf8')).toBe('ran\n');
      expect((await f.api.history(s)).filter((e) => e.round === first.round)).toHaveLength(2);
    });

    it('makes a retry sent while the round still runs wait for it, and run nothing twice', async () => {
      const s = await session();
      const run = uid('run');
      const key = uid('key');
      const calls = [rt('run_command', { command: 'echo ran >> count.txt; sleep 1' })];
      const first = f.api.round(s, run, calls, { headers: { 'Idempotency-Key': key } });
      await waitUntil(() => existsSync(ws(s, 'count.txt')), 10_000, 'the first submission never started');
      const retry = await f.api.round(s, run, calls, { headers: { 'Idempotency-Key': key } });
      const done = await first;
      expect(retry.round).toBe(done.round);
      expect(retry.results).toEqual(done.results);
      expect(readFileSync(ws(s, 'count.txt'), 'utf8')).toBe('ran\n');
    });

    it('answers 409 for the same key with different calls, and runs nothing', async () => {
      const s = await session();
      const run = uid('run');
      const key = uid('key');
      await f.api.round(s, run, [rt('calculate', { expression: '1+1' })], { headers: { 'Idempotency-Key': key } });
      const before = await f.api.history(s);
      const r = await f.api.postRound(s, run, [rt('run_command', { command: 'touch nope.txt' })], {
        headers: { 'Idempotency-Key': key },
      });
      expect(r.status, r.text).toBe(409);
      expect(typeof r.json?.error?.code).toBe('string');
      expect(typeof r.json?.error?.message).toBe('string');
      expect(existsSync(ws(s, 'nope.txt'))).toBe(false);
      expect(await f.api.history(s)).toEqual(before);
    });

    it('compares calls as canonical JSON (key order in args does not make them different)', async () => {
      const s = await session();
      const run = uid('run');
      const key = uid('key');
      const id = uid('c');
      const a = [{ id, name: 'run_tool', args: { name: 'calculate', args: { expression: '2+2' } } }];
      const b = [{ name: 'run_tool', args: { args: { expression: '2+2' }, name: 'calculate' }, id }];
      const first = await f.api.round(s, run, a, { headers: { 'Idempotency-Key': key } });
      const second = await f.api.round(s, run, b as Call[], { headers: { 'Idempotency-Key': key } });
      expect(second.round).toBe(first.round);
    });

    it('scopes a key to its run: the same key in another run is a new round', async () => {
      const s = await session();
      const key = uid('key');
      const calls = [rt('run_command', { command: 'echo ran >> count.txt' })];
      const a = await f.api.round(s, uid('run'), calls, { headers: { 'Idempotency-Key': key } });
      const b = await f.api.round(s, uid('run'), calls, { headers: { 'Idempotency-Key': key } });
      expect(b.round).not.toBe(a.round);
      expect(readFileSync(ws(s, 'count.txt'), 'utf8')).toBe('ran\nran\n');
    });

    it('answers 400 for a key that is not an id', async () => {
      const s = await session();
      const r = await f.api.postRound(s, uid('run'), [rt('calculate', { expression: '1' })], {
        headers: { 'Idempotency-Key': 'has space' },
      });
      expect(r.status).toBe(400);
      expect(await f.api.history(s)).toHaveLength(1); // the find_tools of the setup only
    });
  });

  describe('DELETE /v1/sessions/{session}/runs/{run}', () => {
    it('kills a running command with its process group and ends the rest of the round cancelled, unstarted', async () => {
      const s = await session();
      const run = uid('run');
      const bg = markedSeconds(30);
      const pending = f.api.round(s, run, [
        rt('run_command', { command: `sleep ${bg} & echo started > bg.pid; wait` }),
        rt('run_command', { command: 'touch after.txt' }),
        rt('calculate', { expression: '1+1' }),
      ]);
      await waitUntil(
        () => existsSync(ws(s, 'bg.pid')) && readFileSync(ws(s, 'bg.pid'), 'utf8').trim() !== '',
        10_000,
        'the command never started',
      );
      const started = Date.now();
      const del = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
      expect(del.status, del.text).toBe(200);
      expect(del.json).toEqual({ cancelled: 3 });
      const b = await pending;
      expect(Date.now() - started).toBeLessThan(10_000);
      for (const r of b.results) expect(r).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
      expect(existsSync(ws(s, 'after.txt'))).toBe(false);
      await waitUntil(
        () => pidsWithArg(bg).length === 0,
        5_000,
        `the command's background child sleep ${bg} survived the cancel`,
      );
    });

    it('never starts the queued concurrent calls of a cancelled run', async () => {
      const s = await session();
      const run = uid('run');
      const tag = tagOf('queued');
      const pending = f.api.round(
        s,
        run,
        Array.from({ length: 8 }, (_, i) => rt('http_request', { url: f.target.url('slow', tag, i, { ms: '5000' }) })),
      );
      await waitUntil(() => f.target.tag(tag).hits === 5, 10_000, 'five calls never reached the server');
      const del = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
      expect(del.json).toEqual({ cancelled: 8 });
      const b = await pending;
      for (const r of b.results) expect(r).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
      await sleep(500);
      expect(f.target.tag(tag).hits).toBe(5);
    });

    it('answers {cancelled: 0} for a run with nothing in flight, and lets the run go on afterwards', async () => {
      const s = await session();
      const run = uid('run');
      await f.api.one(s, rt('calculate', { expression: '1' }), run);
      const del = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
      expect(del.status).toBe(200);
      expect(del.json).toEqual({ cancelled: 0 });
      expect((await f.api.one(s, rt('calculate', { expression: '2+2' }), run)).output).toEqual({ value: 4 });
    });

    it('lets a cancelled run take new rounds', async () => {
      const s = await session();
      const run = uid('run');
      const pending = f.api.round(s, run, [rt('run_command', { command: 'sleep 20' })]);
      await sleep(300);
      await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
      expect((await pending).results[0]?.error?.code).toBe('cancelled');
      const next = await f.api.one(s, rt('run_command', { command: 'echo again' }), run);
      expect(next).toMatchObject({ status: 'ok', output: { stdout: 'again\n' } });
    });

    it('answers 404 for an unknown session', async () => {
      const r = await f.api.request('DELETE', `/v1/sessions/${uid('never')}/runs/r1`);
      expect(r.status).toBe(404);
      expect(typeof r.json?.error?.code).toBe('string');
    });
  });
});
