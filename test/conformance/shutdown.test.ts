import { expect, it } from 'vitest';
import { rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';
import { liveGroupMembers, sleep } from './service.js';

async function waitUntil(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what} (waited ${ms} ms)`);
    await sleep(20);
  }
}

// API.md "Processes": SIGTERM drains in-flight rounds and exits 0. This file stops its service.
describeModes('shutdown', (mode) => {
  const f = useService(mode);

  it('drains an in-flight round on SIGTERM, refuses new rounds meanwhile with 503, ends event streams, and exits 0', async () => {
    const s = await f.api.session(['http_request', 'run_command', 'calculate'], {
      provider: 'openai',
      autoApprove: 'all',
    });
    const tag = tagOf('drain');
    const run = uid('run');
    const tap = await f.api.events(s);
    const inFlight = f.api.round(s, run, [
      rt('http_request', { url: f.target.url('slow', tag, 0, { ms: '1500' }) }),
      rt('run_command', { command: 'echo after the slow call' }),
    ]);
    inFlight.catch(() => undefined);
    await waitUntil(() => f.target.tag(tag).hits === 1, 10_000, 'the in-flight call never reached the server');
    const coordinator = f.service.coordinator;
    expect(coordinator.signal('SIGTERM')).toBe(true);
    await sleep(200);
    const refused = await f.api.postRound(s, uid('run'), [rt('calculate', { expression: '1' })]);
    expect(refused.status, refused.text).toBe(503);
    expect(typeof refused.json?.error?.code).toBe('string');
    const b = await inFlight;
    expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(b.results[1]?.output.stdout).toBe('after the slow call\n');
    const exit = await Promise.race([coordinator.exited, sleep(15_000).then(() => 'still running')]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(liveGroupMembers(coordinator.pid)).toEqual([]);
    // An open event stream neither kept the process alive nor missed the drained round's end.
    await tap.ended;
    expect(tap.named('round.completed').map((e) => e.data.round)).toContain(b.round);
  });

  it('stops every worker process with exit code 0 on SIGTERM', async () => {
    expect(f.service.workers).toHaveLength(mode !== 'embedded' ? 2 : 0);
    for (const w of f.service.workers) {
      expect(w.signal('SIGTERM')).toBe(true);
      const exit = await Promise.race([w.exited, sleep(15_000).then(() => 'still running')]);
      expect(exit, w.label).toEqual({ code: 0, signal: null });
    }
  });
});
