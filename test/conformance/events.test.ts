import { expect, it } from 'vitest';
import { direct, type EventTap, rt, type TappedEvent, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

const names = (es: TappedEvent[]) => es.map((e) => e.name);
const ofRound = (es: TappedEvent[], round: string) => es.filter((e) => e.data?.round === round);
const completed = (tap: EventTap, round: string) =>
  tap.waitFor((es) => es.some((e) => e.name === 'round.completed' && e.data.round === round));

// API.md GET /v1/sessions/{session}/events: named events, JSON data, an id on each, and
// Last-Event-ID replay of the last 15 minutes.
describeModes('session event streams', (mode) => {
  const f = useService(mode);
  const session = () => f.api.session(['calculate', 'run_command', 'http_request'], { provider: 'openai' });

  it('answers text/event-stream where every event has id:, event: and data: lines (JSON data)', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    expect(tap.status).toBe(200);
    expect(tap.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const b = await f.api.round(s, uid('run'), [rt('calculate', { expression: '1+1' })]);
    await completed(tap, b.round);
    tap.close();
    const blocks = tap.raw
      .split(/\r?\n\r?\n/)
      .map((block) => block.split(/\r?\n/).filter((l) => l !== '' && !l.startsWith(':') && !l.startsWith('retry:')))
      .filter((lines) => lines.length > 0);
    expect(blocks.length).toBe(3);
    for (const lines of blocks) {
      const fields = lines.map((l) => l.slice(0, l.indexOf(':')));
      expect(fields.sort()).toEqual(['data', 'event', 'id']);
      const id = lines
        .find((l) => l.startsWith('id:'))
        ?.slice(3)
        .trim();
      expect(id).toMatch(/.+/);
      const data = lines.find((l) => l.startsWith('data:'))?.slice(5) ?? '';
      expect(() => JSON.parse(data)).not.toThrow();
    }
    expect(names(tap.events)).toEqual(['round.started', 'tool.result', 'round.completed']);
  });

  it('sends round.started, confirm.requested, tool.result in call order, then round.completed, with their payloads', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    const run = uid('run');
    const tag = tagOf('order');
    const calls = [
      rt('http_request', { url: f.target.url('slow', tag, 0, { ms: '400' }) }),
      rt('calculate', { expression: '2+2' }),
      rt('run_command', { command: 'echo hi' }),
      direct('not_loaded_tool', {}),
    ];
    const pending = f.api.round(s, run, calls);
    const asked = await tap.waitFor((es) => es.find((e) => e.name === 'confirm.requested'));
    await f.api.answer(s, asked.data.confirmationId, { approve: true });
    const b = await pending;
    await completed(tap, b.round);
    tap.close();
    const es = ofRound(tap.events, b.round);
    expect(names(es)).toEqual([
      'round.started',
      'confirm.requested',
      'tool.result',
      'tool.result',
      'tool.result',
      'tool.result',
      'round.completed',
    ]);
    expect(es[0]?.data).toEqual({
      round: b.round,
      run,
      calls: [
        { id: calls[0]?.id, name: 'http_request' },
        { id: calls[1]?.id, name: 'calculate' },
        { id: calls[2]?.id, name: 'run_command' },
        { id: calls[3]?.id, name: 'not_loaded_tool' },
      ],
    });
    expect(es[1]?.data).toMatchObject({
      round: b.round,
      run,
      callId: calls[2]?.id,
      name: 'run_command',
      args: { command: 'echo hi' },
    });
    expect(typeof es[1]?.data.confirmationId).toBe('string');
    // tool.result: {round, run, ...Result}, in commit (call) order although the first call was slowest.
    es.slice(2, 6).forEach((e, i) => {
      expect(e.data).toEqual({ round: b.round, run, ...b.results[i] });
    });
    expect(es[6]?.data).toEqual({ round: b.round, run });
  });

  it('gives every event its own id', async () => {
    const s = await session();
    const tap = await f.api.events(s);
    const run = uid('run');
    const b1 = await f.api.round(s, run, [rt('calculate', { expression: '1' }), rt('calculate', { expression: '2' })]);
    const b2 = await f.api.round(s, run, [rt('calculate', { expression: '3' })]);
    await completed(tap, b2.round);
    tap.close();
    const ids = tap.events.map((e) => e.id);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ofRound(tap.events, b1.round)).toHaveLength(4);
  });

  it('replays what a client missed after Last-Event-ID, in order and with the same ids, then goes on live', async () => {
    const s = await session();
    const run = uid('run');
    const first = await f.api.events(s);
    const a = await f.api.round(s, run, [rt('calculate', { expression: '1+1' })]);
    await completed(first, a.round);
    first.close();
    const lastSeen = first.events.at(-1)?.id ?? '';
    const startedA = first.events[0]?.id ?? '';
    // Missed while disconnected (a client that stayed connected sees what it should get):
    const watcher = await f.api.events(s);
    const b = await f.api.round(s, run, [
      rt('calculate', { expression: '2+2' }),
      rt('calculate', { expression: '3+3' }),
    ]);
    await completed(watcher, b.round);
    watcher.close();
    const missed = watcher.events.filter((e) => e.data?.round === b.round);

    const resumed = await f.api.events(s, { 'Last-Event-ID': lastSeen });
    await completed(resumed, b.round);
    expect(names(resumed.events)).toEqual(['round.started', 'tool.result', 'tool.result', 'round.completed']);
    expect(resumed.events.map((e) => e.id)).toEqual(missed.map((e) => e.id));
    expect(resumed.events.map((e) => e.data)).toEqual(missed.map((e) => e.data));
    const c = await f.api.round(s, run, [rt('calculate', { expression: '4' })]);
    await completed(resumed, c.round);
    resumed.close();
    expect(ofRound(resumed.events, c.round)).toHaveLength(3);

    const fromStart = await f.api.events(s, { 'Last-Event-ID': startedA });
    await completed(fromStart, c.round);
    fromStart.close();
    expect(names(fromStart.events)).toEqual([
      'tool.result',
      'round.completed',
      'round.started',
      'tool.result',
      'tool.result',
      'round.completed',
      'round.started',
      'tool.result',
      'round.completed',
    ]);
  });

  it('replays the whole window for a Last-Event-ID it never issued (such as 0), then goes on live', async () => {
    const s = await session();
    const a = await f.api.round(s, uid('run'), [rt('calculate', { expression: '1' })]);
    for (const id of ['0', 'not-an-event-id', '99999999999999-0']) {
      const tap = await f.api.events(s, { 'Last-Event-ID': id });
      await completed(tap, a.round);
      expect(names(ofRound(tap.events, a.round)), id).toEqual(['round.started', 'tool.result', 'round.completed']);
      const b = await f.api.round(s, uid('run'), [rt('calculate', { expression: '2' })]);
      await completed(tap, b.round);
      tap.close();
    }
  });

  it('replays nothing to a client that sends no Last-Event-ID', async () => {
    const s = await session();
    const a = await f.api.round(s, uid('run'), [rt('calculate', { expression: '1' })]);
    const tap = await f.api.events(s);
    const b = await f.api.round(s, uid('run'), [rt('calculate', { expression: '2' })]);
    await completed(tap, b.round);
    tap.close();
    expect(ofRound(tap.events, a.round)).toHaveLength(0);
    expect(ofRound(tap.events, b.round)).toHaveLength(3);
  });

  it('sends a session’s events to each of its streams and to no other session’s', async () => {
    const s = await session();
    const other = await session();
    const [one, two, stranger] = await Promise.all([f.api.events(s), f.api.events(s), f.api.events(other)]);
    const b = await f.api.round(s, uid('run'), [rt('calculate', { expression: '1' })]);
    await completed(one, b.round);
    await completed(two, b.round);
    const o = await f.api.round(other, uid('run'), [rt('calculate', { expression: '2' })]);
    await completed(stranger, o.round);
    for (const t of [one, two, stranger]) t.close();
    expect(one.events.map((e) => e.id)).toEqual(two.events.map((e) => e.id));
    expect(ofRound(stranger.events, b.round)).toHaveLength(0);
    expect(ofRound(one.events, o.round)).toHaveLength(0);
  });

  it('answers 404 with an error body for an unknown session', async () => {
    const r = await f.api.request('GET', `/v1/sessions/${uid('never')}/events`);
    expect(r.status).toBe(404);
    expect(typeof r.json?.error?.code).toBe('string');
  });
});
