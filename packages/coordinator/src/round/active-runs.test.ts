import { onAbort } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import type { RoundResponse } from '../model.js';
import { ActiveRuns, IDLE_RUN_CONTROLLERS } from './active-runs.js';

const answer: RoundResponse = { round: 'rnd_x', results: [] };
const run = (session: string, r: string) => ({ session, run: r });

/** The signal a round of the run is given, the round ending at once. */
async function signalOf(runs: ActiveRuns, session: string, r: string, during?: (s: AbortSignal) => void) {
  let seen: AbortSignal | undefined;
  await runs.track(run(session, r), async (signal) => {
    seen = signal;
    during?.(signal);
    return answer;
  });
  return seen as AbortSignal;
}

describe('ActiveRuns', () => {
  it("gives a run's next round the signal its last one had, once nothing listens to it any more", async () => {
    const runs = new ActiveRuns();
    const first = await signalOf(runs, 's', 'r', (s) => onAbort(s, () => undefined)());
    expect(await signalOf(runs, 's', 'r')).toBe(first);
    expect(await signalOf(runs, 's', 'other')).not.toBe(first);
  });

  it('gives a fresh signal after the run was cancelled with no round in flight, never an aborted one', async () => {
    const runs = new ActiveRuns();
    const first = await signalOf(runs, 's', 'r');
    expect(await runs.cancel('s', 'r')).toBe(0);
    const next = await signalOf(runs, 's', 'r');
    expect(next).not.toBe(first);
    expect(next.aborted).toBe(false);
  });

  it('does not keep a signal something still listens to: a listener left behind never hears a later cancel', async () => {
    const runs = new ActiveRuns();
    const heard: string[] = [];
    const first = await signalOf(runs, 's', 'r', (s) => onAbort(s, () => heard.push('left behind')));
    const next = await signalOf(runs, 's', 'r');
    expect(next).not.toBe(first);
    let inFlight: AbortSignal | undefined;
    const round = runs.track(run('s', 'r'), (signal) => {
      inFlight = signal;
      return new Promise<RoundResponse>((resolve) => signal.addEventListener('abort', () => resolve(answer)));
    });
    await runs.cancel('s', 'r');
    await round;
    expect(inFlight?.aborted).toBe(true);
    expect(heard).toEqual([]);
  });

  it(`keeps at most ${IDLE_RUN_CONTROLLERS} idle runs' signals, the oldest going first`, async () => {
    const runs = new ActiveRuns();
    const oldest = await signalOf(runs, 's', 'r0');
    for (let i = 1; i <= IDLE_RUN_CONTROLLERS; i++) await signalOf(runs, 's', `r${i}`);
    expect(runs.idleRuns).toBe(IDLE_RUN_CONTROLLERS);
    expect(await signalOf(runs, 's', 'r0')).not.toBe(oldest);
    expect(runs.size).toBe(0);
  });
});
