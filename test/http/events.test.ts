import type { Dispatcher } from '@tool-dispatch/coordinator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fetchSchemas,
  type Harness,
  names,
  putSession,
  round,
  rt,
  sleep,
  startHarness,
  tapEvents,
  uid,
} from './harness.js';

/** Counts live subscriptions, to see the server drop them when a client leaves. */
function countSubscriptions(engine: Dispatcher, counter: { active: number }): Dispatcher {
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'subscribe') {
        return async (...args: Parameters<Dispatcher['subscribe']>) => {
          const unsubscribe = await target.subscribe(...args);
          counter.active++;
          let done = false;
          return () => {
            if (!done) counter.active--;
            done = true;
            unsubscribe();
          };
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const subscriptions = { active: 0 };
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ wrap: (engine) => countSubscriptions(engine, subscriptions) });
});
afterAll(() => h.close());

async function confirmSession() {
  const s = uid('s');
  await putSession(h, s, { provider: 'openai' });
  await fetchSchemas(h, s, ['run_command', 'calculate']);
  return s;
}

describe('GET /v1/sessions/{session}/events', () => {
  it('sends the headers at once, before any event', async () => {
    const s = await confirmSession();
    // The headers came with no event to send (nothing happens in this session): a stream that held
    // them until its first event would leave tapEvents waiting, and the test would time out.
    const tap = await tapEvents(h, s);
    expect(tap.status).toBe(200);
    expect(tap.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(tap.headers.get('cache-control')).toContain('no-cache');
    expect(tap.events).toEqual([]);
    tap.close();
  });

  it('streams round.started, confirm.requested, tool.result in commit order, round.completed', async () => {
    const s = await confirmSession();
    const tap = await tapEvents(h, s);
    const run = uid('run');
    const calls = [
      rt('calculate', { expression: '1+1' }),
      rt('run_command', { command: 'printf x > ev.txt' }),
      rt('calculate', { expression: '2+2' }),
    ];
    const pending = h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls });
    const confirm = await tap.waitFor((es) => es.find((e) => e.name === 'confirm.requested'));
    expect(names(tap.events)).toEqual(['round.started', 'confirm.requested']);
    const answer = await h.api('POST', `/v1/sessions/${s}/confirmations/${confirm.data.confirmationId}`, {
      approve: true,
    });
    expect(answer.status).toBe(200);
    const b = (await pending).json;
    await tap.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    tap.close();

    expect(names(tap.events)).toEqual([
      'round.started',
      'confirm.requested',
      'tool.result',
      'tool.result',
      'tool.result',
      'round.completed',
    ]);
    const [started, requested, ...rest] = tap.events;
    expect(started?.data).toMatchObject({ round: b.round, run });
    expect(started?.data.calls.map((c: { id: string }) => c.id)).toEqual(calls.map((c) => c.id));
    expect(requested?.data).toMatchObject({
      round: b.round,
      run,
      callId: calls[1]?.id,
      name: 'run_command',
      args: { command: 'printf x > ev.txt' },
    });
    expect(typeof requested?.data.confirmationId).toBe('string');
    const results = rest.slice(0, 3);
    expect(results.map((e) => e.data.id)).toEqual(calls.map((c) => c.id));
    for (const [i, e] of results.entries()) {
      expect(e.data).toMatchObject({ round: b.round, run, ...b.results[i] });
    }
    expect(rest[3]?.data).toMatchObject({ round: b.round, run });
    // The contract's encoding: each event has its own event: and id: lines.
    const ids = tap.events.map((e) => e.id);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const e of tap.events) expect(tap.raw).toContain(`event: ${e.name}\n`);
  });

  it('replays what a reconnecting client missed, with Last-Event-ID, while the round is still in progress', async () => {
    const s = await confirmSession();
    const first = await tapEvents(h, s);
    const run = uid('run');
    const calls = [
      rt('run_command', { command: 'sleep 0.3; printf y > resumed.txt' }),
      rt('calculate', { expression: '5+5' }),
    ];
    const pending = h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls });
    const confirm = await first.waitFor((es) => es.find((e) => e.name === 'confirm.requested'));
    first.close();
    await h.api('POST', `/v1/sessions/${s}/confirmations/${confirm.data.confirmationId}`, { approve: true });
    // The round is running its command now; reconnect before it ends.
    const second = await tapEvents(h, s, { 'last-event-id': String(confirm.id) });
    const b = (await pending).json;
    await second.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    second.close();
    expect(names(second.events)).toEqual(['tool.result', 'tool.result', 'round.completed']);
    expect(second.events.map((e) => e.data.id).slice(0, 2)).toEqual(calls.map((c) => c.id));
    expect(second.events[0]?.data.status).toBe(b.results[0].status);
  });

  it('replays from Last-Event-ID after the round has ended', async () => {
    const s = await confirmSession();
    const tap = await tapEvents(h, s);
    const b = await round(h, s, uid('run'), [rt('calculate', { expression: '7+7' })]);
    await tap.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    tap.close();
    const startedId = tap.events.find((e) => e.name === 'round.started')?.id;
    const replay = await tapEvents(h, s, { 'last-event-id': String(startedId) });
    await replay.waitFor((es) => es.some((e) => e.name === 'round.completed'));
    replay.close();
    expect(names(replay.events)).toEqual(['tool.result', 'round.completed']);
    expect(replay.events[0]?.data).toMatchObject({ round: b.round, status: 'ok', output: { value: 14 } });
  });

  it('drops the subscription when the client goes away', async () => {
    const s = await confirmSession();
    const before = subscriptions.active;
    const tap = await tapEvents(h, s);
    await sleep(50);
    expect(subscriptions.active).toBe(before + 1);
    tap.close();
    for (let i = 0; i < 100 && subscriptions.active !== before; i++) await sleep(20);
    expect(subscriptions.active).toBe(before);
  });

  it('answers 404 for an unknown session and 400 for a bad session id, as JSON', async () => {
    const unknown = await h.api('GET', `/v1/sessions/${uid('none')}/events`);
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('session_not_found');
    const bad = await h.api('GET', '/v1/sessions/bad%20id/events');
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('invalid_id');
  });
});

describe('when the server is quiet or closing', () => {
  it('sends heartbeat comments', async () => {
    const quiet = await startHarness({ server: { sse: { heartbeatMs: 50 } } });
    try {
      const s = uid('s');
      await putSession(quiet, s);
      const tap = await tapEvents(quiet, s);
      await sleep(200);
      tap.close();
      expect(tap.raw.match(/^: ping$/gm)?.length ?? 0).toBeGreaterThanOrEqual(2);
    } finally {
      await quiet.close();
    }
  });

  it('ends open streams on close, so shutdown does not wait for clients', async () => {
    const closing = await startHarness();
    const s = uid('s');
    await putSession(closing, s);
    const tap = await tapEvents(closing, s);
    const started = Date.now();
    await closing.close();
    await tap.ended;
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
