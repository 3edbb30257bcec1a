import { describe, expect, it } from 'vitest';
import type { DispatchEvent } from '../events/event-bus.js';
import { MemoryEventBus } from '../events/memory.js';
import type { InputHub } from '../inputs/input-hub.js';
import { MemoryInputHub } from '../inputs/memory.js';
import type { PlannedCall, RoundContext } from '../model.js';
import { answerInput, type ParkDeps, parkCall } from './park.js';

/** A memory hub that says it is shared, as the Redis one does. */
class SharedMemoryHub extends MemoryInputHub {
  override readonly shared: boolean = true;
}

const ref = { session: 's1', run: 'r1', round: 'rnd_1' };
const planned = (index: number, name = 'ask_user', args: Record<string, unknown> = { question: 'q?' }) =>
  ({ call: { id: `c${index}`, index, name, args }, name, args }) as unknown as PlannedCall;

async function fixture(inputs: InputHub = new MemoryInputHub()) {
  const events = new MemoryEventBus();
  const seen: DispatchEvent[] = [];
  await events.subscribe('s1', undefined, (e) => seen.push(e));
  const release = new AbortController();
  const run = new AbortController();
  const deps: ParkDeps = { inputs, events, inputTimeoutMs: 5_000, parkRelease: release.signal };
  const ctx: RoundContext = { ref, session: {} as RoundContext['session'], signal: run.signal, owner: undefined };
  const whenParked = async () => {
    for (let i = 0; i < 200 && (await inputs.pending('s1')).length === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
  };
  return { inputs, deps, ctx, seen, release, run, whenParked };
}

describe('parkCall', () => {
  it('says input.requested once, when it parks the call, and not when a takeover parks it again', async () => {
    const f = await fixture();
    const first = parkCall(f.deps, f.ctx, planned(0), 'interactive');
    await f.whenParked();
    const again = parkCall(f.deps, f.ctx, planned(0), 'interactive');
    await new Promise((r) => setTimeout(r, 10));
    await f.inputs.answer('s1', 'in_rnd_1_0', { output: 'yes' });
    expect((await first).output).toEqual({ answer: 'yes' });
    expect((await again).output).toEqual({ answer: 'yes' });
    expect(f.seen.filter((e) => e.name === 'input.requested')).toHaveLength(1);
  });

  it('ends at once with an answer posted while nobody waited (a takeover finds it)', async () => {
    const f = await fixture();
    await f.inputs.park({
      inputId: 'in_rnd_1_2',
      kind: 'client',
      session: 's1',
      round: 'rnd_1',
      run: 'r1',
      callId: 'c2',
      callIndex: 2,
      name: 'ui_pick',
      args: {},
      createdAt: Date.now(),
      deadline: Date.now() + 5_000,
    });
    await f.inputs.answer('s1', 'in_rnd_1_2', { output: { picked: 'a' } });
    const result = await parkCall(f.deps, f.ctx, planned(2, 'ui_pick', {}), 'client');
    expect(result).toMatchObject({ status: 'ok', output: { picked: 'a' }, ranOn: 'client' });
    expect(f.seen).toEqual([]);
  });

  describe('when the coordinator lets go (drain)', () => {
    it('leaves a shared parked call parked and gives the round up for another coordinator', async () => {
      const f = await fixture(new SharedMemoryHub());
      const parked = parkCall(f.deps, f.ctx, planned(0), 'interactive');
      await f.whenParked();
      f.release.abort();
      await expect(parked).rejects.toMatchObject({ code: 'shutting_down' });
      expect((await f.inputs.pending('s1')).map((i) => i.inputId)).toEqual(['in_rnd_1_0']);
    });

    it('ends an embedded parked call cancelled, saying the service stopped', async () => {
      const f = await fixture();
      const parked = parkCall(f.deps, f.ctx, planned(0), 'interactive');
      await f.whenParked();
      f.release.abort();
      expect(await parked).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
      expect(await f.inputs.pending('s1')).toEqual([]);
    });
  });
});

describe('answerInput', () => {
  it('answers by inputId or a unique callId with the status the answer gives, and refuses an answer outside choices', async () => {
    const f = await fixture();
    const choosing = parkCall(f.deps, f.ctx, planned(0, 'ask_user', { question: 'q', choices: ['a'] }), 'interactive');
    await f.whenParked();
    expect(await answerInput(f.inputs, 's1', 'c0', { output: 'b' })).toMatchObject({ kind: 'refused' });
    expect(await answerInput(f.inputs, 's1', 'c0', { output: 'a' })).toMatchObject({ kind: 'answered', status: 'ok' });
    expect((await choosing).output).toEqual({ answer: 'a' });
    expect(await answerInput(f.inputs, 's1', 'in_rnd_1_0', { error: 'x' })).toEqual({ kind: 'not_found' });
  });
});
