import fc from 'fast-check';
import { expect, it } from 'vitest';
import { uid } from './api.js';
import { describeModes, useService } from './fixture.js';

// A fast-check fuzzer over round bodies, over real HTTP, in every mode (API.md: bad input gets a
// 4xx naming the problem, or a 200 whose bad calls end `invalid`/`unknown`/…): never a 5xx, the
// service never goes down, every accepted round answers one result per call in call order, and a
// rejected request changes nothing (the session's history stays as it was). Tools with side
// effects outside the session (commands, HTTP, file writes) and confirm-gated ones are left out
// of the names: the fuzzer must not run random shell commands.

const NAMES = [
  'calculate',
  'read_files',
  'find_files',
  'write_todo',
  'find_tools',
  'run_tool',
  'no_such_tool',
  '',
  '__proto__',
  'constructor',
  'mcp__nobody__nothing',
  'a:b',
  '{}',
  '*',
  'line\nbreak',
  'ünïcödé',
];
const ID = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.constantFrom('dup', '', 'a:b', '{x}', '*', 'line\nbreak', 'ünï', '__proto__', 'x'.repeat(300)),
);
const ARGS = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.record({ expression: fc.string({ maxLength: 40 }) }),
  fc.record({ paths: fc.array(fc.string({ maxLength: 30 }), { maxLength: 3 }) }),
  fc.record({ pattern: fc.constantFrom('*', '**/*', '../*', '/etc/*', 'up/*/*') }),
  fc.record({
    name: fc.constantFrom('calculate', 'read_files', 'find_files', 'no_such_tool', '__proto__'),
    args: fc.jsonValue({ maxDepth: 3 }),
  }),
);
/** Calls of the right shape with ids a round accepts: exercises the calls' own checks, not the request's. */
const GOOD_ID = fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/);
const WELL_FORMED = fc.record({ id: GOOD_ID, name: fc.constantFrom(...NAMES), args: ARGS });
const CALL = fc.oneof(
  { weight: 6, arbitrary: WELL_FORMED },
  fc.record({ id: ID, name: fc.constantFrom(...NAMES), args: ARGS }),
  // Fields missing or of the wrong type.
  fc.record({ id: fc.jsonValue({ maxDepth: 1 }), name: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 2 }),
);
const BODY = fc.oneof(
  { weight: 5, arbitrary: fc.record({ calls: fc.uniqueArray(WELL_FORMED, { selector: (c) => c.id, maxLength: 10 }) }) },
  { weight: 3, arbitrary: fc.record({ calls: fc.array(CALL, { maxLength: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ calls: fc.jsonValue({ maxDepth: 2 }) }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

describeModes('fuzzed rounds', (mode) => {
  const f = useService(mode);

  it('never answers 5xx, answers accepted rounds one result per call in order, and leaves state alone on a 4xx', async () => {
    const session = await f.api.session(['calculate', 'read_files', 'find_files', 'write_todo']);
    const historyLength = async () => (await f.api.history(session)).length;
    let accepted = 0;
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(BODY, async (body) => {
        const before = await historyLength();
        const r = await f.api.request('POST', `/v1/sessions/${session}/runs/${uid('fz')}/rounds`, body);
        const shown = `${r.status} ${r.text.slice(0, 300)} for ${JSON.stringify(body).slice(0, 300)}`;
        expect(r.status, shown).toBeLessThan(500);
        if (r.status === 200) {
          accepted++;
          const calls = (body as { calls: Array<{ id?: unknown }> }).calls;
          expect(r.json.results, shown).toHaveLength(calls.length);
          r.json.results.forEach((res: { id: unknown; status: unknown }, i: number) => {
            expect(res.id, shown).toBe(calls[i]?.id);
            expect(typeof res.status, shown).toBe('string');
          });
          return;
        }
        rejected++;
        expect(r.status, shown).toBeGreaterThanOrEqual(400);
        expect(typeof r.json?.error?.code, shown).toBe('string');
        expect(typeof r.json?.error?.message, shown).toBe('string');
        expect(await historyLength(), `a rejected request changed the history: ${shown}`).toBe(before);
      }),
      { numRuns: 60 },
    );
    console.log(`[fuzz] ${mode}: ${accepted} rounds accepted, ${rejected} rejected, none 5xx`);
    // Both kinds were exercised, and the service is still up.
    expect(accepted).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
    expect((await f.api.request('GET', '/healthz')).status).toBe(200);
  }, 300_000);
});
