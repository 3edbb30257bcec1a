import { expect, it } from 'vitest';
import { uid } from './api.js';
import { describeModes, useService } from './fixture.js';

// API.md: a call whose args are over the limits ends `invalid` naming the problem; the round
// still completes (200), whatever the mode, and nothing else of the round is lost.
describeModes('hostile input', (mode) => {
  const f = useService(mode);

  /** A round body (as text: too deep for JSON.stringify) whose first call's args nest `depth` levels. */
  const deepRound = (depth: number) =>
    `{"calls":[{"id":"deep","name":"run_tool","args":{"name":"calculate","args":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}},` +
    `{"id":"fine","name":"run_tool","args":{"name":"calculate","args":{"expression":"6*7"}}}]}`;

  for (const depth of [33, 5_000, 20_000]) {
    it(`answers a call with args nested ${depth} levels invalid and runs the rest of the round`, async () => {
      const s = await f.api.session(['calculate']);
      const r = await f.api.request('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, deepRound(depth));
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      const [deep, fine] = r.json.results;
      expect(deep).toMatchObject({ id: 'deep', status: 'invalid' });
      expect(deep.error.message).toMatch(/nested deeper than 32 levels/);
      expect(fine).toMatchObject({ id: 'fine', status: 'ok', output: { value: 42 } });
    });
  }

  it('answers a retry of such a round under its Idempotency-Key with the same round', async () => {
    const s = await f.api.session(['calculate']);
    const run = uid('run');
    const headers = { 'idempotency-key': uid('key'), 'content-type': 'application/json' };
    const first = await f.api.request('POST', `/v1/sessions/${s}/runs/${run}/rounds`, deepRound(5_000), headers);
    const again = await f.api.request('POST', `/v1/sessions/${s}/runs/${run}/rounds`, deepRound(5_000), headers);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.json.round).toBe(first.json.round);
    expect(again.json.results).toEqual(first.json.results);
  });
});
