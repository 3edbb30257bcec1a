import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ParkedInput } from '../model.js';
import type { InputHub } from './input-hub.js';

/** What one contract test works on: a hub, and a peer (another coordinator's view of the same store; the hub itself where there is one process). */
export interface InputHubFixture {
  hub: InputHub;
  peer: InputHub;
  cleanup(): Promise<void>;
}

let seq = 0;
function input(over: Partial<ParkedInput> = {}): ParkedInput {
  const now = Date.now();
  const n = ++seq;
  return {
    inputId: `in_rnd_${n}_0`,
    kind: 'interactive',
    session: 's1',
    round: `rnd_${n}`,
    run: 'r1',
    callId: `call-${n}`,
    callIndex: 0,
    name: 'ask_user',
    args: { question: 'Which colour?' },
    createdAt: now,
    deadline: now + 10_000,
    ...over,
  };
}

const live = () => new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The rules every InputHub keeps (STYLE.md: one shared suite, run against each implementation).
 * `make` gives a fresh, empty store for each test.
 */
export function describeInputHubContract(name: string, make: () => Promise<InputHubFixture>): void {
  describe(`InputHub contract: ${name}`, () => {
    let f: InputHubFixture;
    beforeEach(async () => {
      f = await make();
    });
    afterEach(async () => {
      await f.cleanup();
    });

    describe('when a call is parked', () => {
      it('stores it fresh once; parking it again keeps the first entry and its deadline', async () => {
        const first = input();
        expect(await f.hub.park(first)).toEqual({ kind: 'parked', input: first, fresh: true });
        const again = { ...first, createdAt: first.createdAt + 5, deadline: first.deadline + 5_000 };
        expect(await f.peer.park(again)).toEqual({ kind: 'parked', input: first, fresh: false });
      });

      it('keeps every kind of parked input: a running call’s elicitation under its own inputId too', async () => {
        const call = input({ kind: 'client', name: 'client_lookup', args: { q: 'x' } });
        const asked = input({
          kind: 'elicitation',
          inputId: `${call.inputId}_1`,
          round: call.round,
          callId: call.callId,
          name: 'mcp__ev__ask',
          args: { message: 'Your name?', requestedSchema: { type: 'object' } },
        });
        await f.hub.park(call);
        expect(await f.hub.park(asked)).toEqual({ kind: 'parked', input: asked, fresh: true });
        expect((await f.peer.pending('s1')).filter((i) => i.round === call.round)).toEqual([call, asked]);
      });

      it('lists the session’s parked calls oldest first, a round’s in call order, and no other session’s', async () => {
        const t = Date.now();
        const a1 = input({ round: 'rnd_a', inputId: 'in_rnd_a_1', callIndex: 1, createdAt: t });
        const a0 = input({ round: 'rnd_a', inputId: 'in_rnd_a_0', callIndex: 0, createdAt: t });
        const b = input({ createdAt: t - 10 });
        const other = input({ session: 's2' });
        for (const i of [a1, a0, b, other]) await f.hub.park(i);
        expect((await f.peer.pending('s1')).map((i) => i.inputId)).toEqual([b.inputId, a0.inputId, a1.inputId]);
        expect((await f.peer.pending('s2')).map((i) => i.inputId)).toEqual([other.inputId]);
      });

      it('finds it by inputId or by a callId only it has; several with the callId are ambiguous', async () => {
        const a = input({ callId: 'same' });
        const b = input({ callId: 'same' });
        const c = input();
        for (const i of [a, b, c]) await f.hub.park(i);
        expect(await f.peer.find('s1', a.inputId)).toEqual({ kind: 'found', input: a });
        expect(await f.peer.find('s1', c.callId)).toEqual({ kind: 'found', input: c });
        expect(await f.peer.find('s1', 'same')).toEqual({ kind: 'ambiguous', count: 2 });
        expect(await f.peer.find('s1', 'nothing')).toEqual({ kind: 'not_found' });
        expect(await f.peer.find('s2', a.inputId)).toEqual({ kind: 'not_found' });
      });
    });

    describe('when it is answered', () => {
      it('ends the wait with the answer, given on another coordinator; a second answer finds nothing', async () => {
        const i = input();
        await f.hub.park(i);
        const waited = f.hub.wait(i, { signal: live() });
        await sleep(20);
        expect(await f.peer.answer('s1', i.inputId, { output: 'blue' })).toBe('answered');
        expect(await waited).toEqual({ by: 'answer', answer: { output: 'blue' } });
        expect(await f.peer.answer('s1', i.inputId, { output: 'red' })).toBe('not_found');
        expect(await f.hub.pending('s1')).toEqual([]);
      });

      it('keeps an error answer as posted', async () => {
        const i = input();
        await f.hub.park(i);
        const waited = f.hub.wait(i, { signal: live() });
        expect(await f.peer.answer('s1', i.inputId, { error: 'no idea' })).toBe('answered');
        expect(await waited).toEqual({ by: 'answer', answer: { error: 'no idea' } });
      });

      it('gives an answer posted between park and wait to the wait', async () => {
        const i = input();
        await f.hub.park(i);
        await f.peer.answer('s1', i.inputId, { output: { v: 1 } });
        expect(await f.hub.wait(i, { signal: live() })).toEqual({ by: 'answer', answer: { output: { v: 1 } } });
      });

      it('gives an answer posted while nobody waited to whoever parks the call again (a takeover)', async () => {
        const i = input();
        await f.hub.park(i);
        await f.peer.answer('s1', i.inputId, { output: 'later' });
        expect(await f.peer.park({ ...i, createdAt: i.createdAt + 1 })).toEqual({
          kind: 'settled',
          settlement: { by: 'answer', answer: { output: 'later' } },
        });
      });

      it('answers nothing in another session under the same inputId', async () => {
        const i = input();
        await f.hub.park(i);
        expect(await f.peer.answer('s2', i.inputId, { output: 'x' })).toBe('not_found');
        expect(await f.hub.pending('s1')).toHaveLength(1);
      });
    });

    describe('when nobody answers in time', () => {
      it('ends the wait at the deadline with timeout, and takes no answer after', async () => {
        const i = input({ deadline: Date.now() + 120 });
        await f.hub.park(i);
        expect(await f.hub.wait(i, { signal: live() })).toEqual({ by: 'timeout' });
        expect(await f.hub.pending('s1')).toEqual([]);
        expect(await f.peer.answer('s1', i.inputId, { output: 'late' })).toBe('not_found');
      });

      it('neither lists nor takes an answer for a call past its deadline that nobody waits for', async () => {
        const i = input({ deadline: Date.now() + 30 });
        await f.hub.park(i);
        await sleep(60);
        expect(await f.peer.pending('s1')).toEqual([]);
        expect(await f.peer.find('s1', i.inputId)).toEqual({ kind: 'not_found' });
        expect(await f.peer.answer('s1', i.inputId, { output: 'late' })).toBe('not_found');
      });
    });

    describe('when the wait is cancelled or released', () => {
      it('ends cancelled when the signal aborts, and takes no answer after', async () => {
        const i = input();
        await f.hub.park(i);
        const ac = new AbortController();
        const waited = f.hub.wait(i, { signal: ac.signal });
        ac.abort();
        expect(await waited).toEqual({ by: 'cancelled' });
        expect(await f.peer.answer('s1', i.inputId, { output: 'x' })).toBe('not_found');
        expect(await f.peer.pending('s1')).toEqual([]);
      });

      it('ends released when let go, leaving the call parked and answerable', async () => {
        const i = input();
        await f.hub.park(i);
        const release = new AbortController();
        const waited = f.hub.wait(i, { signal: live(), release: release.signal });
        release.abort();
        expect(await waited).toEqual({ by: 'released' });
        expect((await f.peer.pending('s1')).map((p) => p.inputId)).toEqual([i.inputId]);
        expect(await f.peer.answer('s1', i.inputId, { output: 'kept' })).toBe('answered');
        expect((await f.peer.park(i)).kind).toBe('settled');
      });

      it('settles with the answer that won the race', async () => {
        const i = input();
        const j = input();
        await f.hub.park(i);
        await f.hub.park(j);
        await f.peer.answer('s1', i.inputId, { output: 'first' });
        expect(await f.hub.settle('s1', [i.inputId, j.inputId], { by: 'cancelled' })).toEqual([
          { by: 'answer', answer: { output: 'first' } },
          { by: 'cancelled' },
        ]);
        expect(await f.hub.pending('s1')).toEqual([]);
      });
    });
  });
}
