// `tool-dispatch dev`'s /metrics shows what its in-process workers do: td_worker_* of the calls
// run in the process, and a td_workers_alive that says how many run handlers (embedded: the
// process itself, 1; with REDIS_URL: its in-process workers, from their announcements).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCleanMetrics } from '../support/promtool.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { parseExposition, sampleValue } from './exposition.js';
import { type Coordinator, makeWorkspaceRoot, request, startDevProcess } from './processes.js';

let redis: TestRedis;
let workspace: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  redis = await startRedis();
  workspace = await makeWorkspaceRoot();
}, 60_000);
afterAll(async () => {
  await redis?.stop();
  await workspace?.remove();
});

async function scrape(dev: Coordinator) {
  const r = await request(`${dev.url}/metrics`);
  expect(r.status).toBe(200);
  return { text: r.text, samples: parseExposition(r.text) };
}

/** find_tools for calculate (its schema is deferred), then a round of two calculate calls, both ok. */
async function roundOfCalculate(dev: Coordinator, session: string): Promise<void> {
  const put = await request(`${dev.url}/v1/sessions/${session}`, { method: 'PUT', body: { provider: 'openai' } });
  expect(put.status).toBe(200);
  const round = async (run: string, calls: unknown[]) => {
    const r = await request(`${dev.url}/v1/sessions/${session}/runs/${run}/rounds`, { body: { calls } });
    expect(r.status).toBe(200);
    return (r.json as { results: { status: string; output?: { missing?: string[] } }[] }).results;
  };
  // A coordinator answers with the handler set it knows while it reads a fresh one: the workers'
  // first announcement may come a read later.
  const deadline = Date.now() + 20_000;
  for (let i = 1; ; i++) {
    const [found] = await round(`f${i}`, [{ id: 'f1', name: 'find_tools', args: { names: ['calculate'] } }]);
    if (found?.status === 'ok' && !found.output?.missing?.length) break;
    if (Date.now() > deadline) throw new Error(`find_tools never found calculate: ${JSON.stringify(found)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const calls = ['1 + 1', '2 + 2'].map((expression, i) => ({
    id: `c${i}`,
    name: 'run_tool',
    args: { name: 'calculate', args: { expression } },
  }));
  expect((await round('r1', calls)).map((c) => c.status)).toEqual(['ok', 'ok']);
}

describe.each([
  ['embedded', false, 1],
  ['with REDIS_URL', true, 2],
] as const)('tool-dispatch dev %s', (_label, overRedis, alive) => {
  let dev: Coordinator;
  beforeAll(async () => {
    dev = await startDevProcess({
      redisUrl: overRedis ? redis.url : '',
      prefix: randomPrefix(),
      workspaceRoot: workspace.dir,
    });
  }, 90_000);
  afterAll(async () => {
    await dev?.stop();
  });

  it(`reports td_workers_alive ${alive} and counts the calls its workers run in td_worker_executions_total`, async () => {
    const ok = { tool: 'calculate', status: 'ok' };
    const deadline = Date.now() + 20_000;
    let before = await scrape(dev);
    // In-process workers announce themselves just after `listening on`.
    while (sampleValue(before.samples, 'td_workers_alive') !== alive && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      before = await scrape(dev);
    }
    expect(sampleValue(before.samples, 'td_workers_alive')).toBe(alive);
    expect(sampleValue(before.samples, 'td_worker_executions_total', ok)).toBe(0);
    expect(sampleValue(before.samples, 'td_worker_inflight', { queue: 'concurrent' })).toBe(0);
    await roundOfCalculate(dev, `s-dev-${overRedis ? 'redis' : 'embedded'}`);
    const after = await scrape(dev);
    expect(sampleValue(after.samples, 'td_worker_executions_total', ok)).toBe(2);
    await expectCleanMetrics(after.text);
  }, 60_000);
});
