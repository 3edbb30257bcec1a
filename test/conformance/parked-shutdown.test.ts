import { afterAll, expect, it } from 'vitest';
import { Api, direct, uid } from './api.js';
import { describeModes, useService } from './fixture.js';
import { type ProcessGroup, sleep, startExtraCoordinator, stopGroup } from './service.js';

/** The parked calls of a session (GET .../inputs). */
async function inputs(api: Api, s: string): Promise<Array<{ inputId: string; callId: string }>> {
  const r = await api.request('GET', `/v1/sessions/${s}/inputs`);
  if (r.status !== 200) throw new Error(`GET inputs → ${r.status} ${r.text}`);
  return r.json.inputs;
}

async function parked(api: Api, s: string, callId: string): Promise<{ inputId: string }> {
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(25)) {
    const found = (await inputs(api, s)).find((i) => i.callId === callId);
    if (found) return found;
  }
  throw new Error(`call ${callId} was never parked`);
}

// API.md "Processes" (SIGTERM drains) with parked calls: the drain does not wait for them beyond
// a short grace. Distributed, they stay parked for another coordinator; embedded, they end
// cancelled saying the service stopped. This file stops its service's coordinator.
describeModes('parked calls at shutdown', (mode) => {
  const f = useService(mode);
  const extra: ProcessGroup[] = [];
  afterAll(async () => {
    await Promise.all(extra.map((g) => stopGroup(g)));
  });

  it('does not wait for a parked call beyond a short grace on SIGTERM, and exits 0', async () => {
    const second = mode !== 'embedded' ? await startExtraCoordinator(f.service) : undefined;
    if (second) extra.push(second.group);
    const s = await f.api.session(['ask_user'], { provider: 'claude-code' });
    const run = uid('run');
    const call = direct('ask_user', { question: 'Still there?' });
    const key = { 'idempotency-key': uid('key') };
    const inFlight = f.api.postRound(s, run, [call], { headers: key });
    const input = await parked(f.api, s, call.id);
    const coordinator = f.service.coordinator;
    const t0 = Date.now();
    expect(coordinator.signal('SIGTERM')).toBe(true);
    const answered = await inFlight;
    const exit = await Promise.race([coordinator.exited, sleep(20_000).then(() => 'still running')]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - t0, 'the drain waited for the parked call').toBeLessThan(15_000);
    if (!second) {
      // Embedded: nobody else could answer it, so it ends cancelled, saying the service stopped.
      expect(answered.status, answered.text).toBe(200);
      expect(answered.json.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
      expect(answered.json.results[0].error.message).toMatch(/service stopped/);
      return;
    }
    // Distributed: the round is left to another coordinator; the call stays parked there.
    expect(answered.status, answered.text).toBe(503);
    const other = new Api(second.base);
    expect((await inputs(other, s)).map((i) => i.inputId)).toEqual([input.inputId]);
    const a = await other.request('POST', `/v1/sessions/${s}/inputs/${input.inputId}`, { output: 'yes' });
    expect(a.status, a.text).toBe(200);
    // The retry under the round's Idempotency-Key waits for the takeover (the lease lapses) and gets the answer.
    const retried = await other.round(s, run, [call], { headers: key });
    expect(retried.results[0]).toMatchObject({ status: 'ok', output: { answer: 'yes' } });
    expect((await other.history(s, 'ask_user')).map((e) => e.id)).toEqual([call.id]);
  }, 120_000);
});
