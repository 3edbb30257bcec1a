// TD_MAX_ROUNDS_IN_FLIGHT / TD_ROUND_QUEUE_MS over real HTTP: past the limit a round waits its
// turn in arrival order, before anything of it begins, and one that waited too long is answered
// 503 overloaded with Retry-After, leaving no trace; the rounds in flight are not disturbed.
import { afterEach, expect, it } from 'vitest';
import { until } from '../support/until.js';
import { direct, fetchSchemas, type Harness, putSession, startHarness, uid } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A tool whose calls wait until the test lets them go, in the order they started. */
function gate() {
  const started: string[] = [];
  const waiting: Array<() => void> = [];
  return {
    started,
    release: () => waiting.shift()?.(),
    tool: {
      name: 'wait_here',
      description: 'waits for the test',
      parameters: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
      concurrency: 'concurrent' as const,
    },
    handler: async (args: Record<string, unknown>) => {
      started.push(String(args.tag));
      await new Promise<void>((r) => waiting.push(r));
      return { tag: args.tag };
    },
  };
}

async function setup(config: { maxRoundsInFlight: number; roundQueueMs: number }) {
  const g = gate();
  h = await startHarness({
    config,
    engine: { tools: [g.tool], handlers: [{ name: 'wait_here', handler: g.handler }] },
  });
  const session = uid('s');
  await putSession(h, session, { provider: 'claude-code' });
  await fetchSchemas(h, session, ['wait_here']);
  const round = (tag: string, run = uid('run')) =>
    (h as Harness).api('POST', `/v1/sessions/${session}/runs/${run}/rounds`, {
      calls: [direct('wait_here', { tag }, `c-${tag}`)],
    });
  return { g, session, round, harness: h };
}

it('answers a round that waited TD_ROUND_QUEUE_MS for its turn 503 overloaded with Retry-After, and records nothing of it', async () => {
  const { g, session, round, harness } = await setup({ maxRoundsInFlight: 1, roundQueueMs: 300 });
  const first = round('first');
  await until(() => g.started.length === 1, { what: 'g.started.length === 1' });
  const refused = await round('refused', 'run-refused');
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('1');
  expect(refused.json).toMatchObject({ error: { code: 'overloaded' } });
  expect((refused.json as { error: { message: string } }).error.message).toMatch(/TD_MAX_ROUNDS_IN_FLIGHT/);
  g.release();
  expect((await first).status).toBe(200);
  const history = await harness.api('GET', `/v1/sessions/${session}/history?tool=wait_here`);
  expect(history.status).toBe(200);
  expect(JSON.stringify(history.json)).toContain('run-');
  expect(JSON.stringify(history.json)).not.toContain('run-refused');
  expect(g.started).toEqual(['first']);
  // Room again: the same round sent again runs.
  const again = round('again', 'run-refused');
  await until(() => g.started.length === 2, { what: 'g.started.length === 2' });
  g.release();
  expect((await again).status).toBe(200);
});

it('runs waiting rounds in the order they arrived, each once the one before it ended', async () => {
  const { g, round } = await setup({ maxRoundsInFlight: 1, roundQueueMs: 10_000 });
  const a = round('a');
  await until(() => g.started.length === 1, { what: 'g.started.length === 1' });
  const b = round('b');
  await new Promise((r) => setTimeout(r, 20));
  const c = round('c');
  await new Promise((r) => setTimeout(r, 50));
  expect(g.started).toEqual(['a']); // b and c wait: one round in flight
  for (let i = 0; i < 3; i++) {
    await until(() => g.started.length === i + 1, { what: 'g.started.length === i + 1' });
    g.release();
  }
  const answers = await Promise.all([a, b, c]);
  expect(answers.map((x) => x.status)).toEqual([200, 200, 200]);
  expect(g.started).toEqual(['a', 'b', 'c']);
});
