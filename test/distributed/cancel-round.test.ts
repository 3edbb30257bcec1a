import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDistributedEngine, type RoundView } from '@tool-dispatch/coordinator';
import { resolveConfig } from '@tool-dispatch/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// API.md v1.3: an async round's view and its own cancel (Dispatcher.getRound / cancelRound)
// through a coordinator other than the one running it: two engines on one Redis; the round's
// calls are client tools (parked: no worker needed), so the round waits until answered or cancelled.
type Built = Awaited<ReturnType<typeof createDistributedEngine>>;
let redis: TestRedis;
let workspaces: string;
let a: Built;
let b: Built;
const PICK = { name: 'pick_file', description: 'the client picks a file', parameters: { type: 'object' } };

beforeAll(async () => {
  redis = await startRedis();
  workspaces = await mkdtemp(path.join(tmpdir(), 'td-cancel-round-'));
  const config = resolveConfig({ workspaceRoot: workspaces, redisUrl: redis.url, prefix: randomPrefix() }, {});
  [a, b] = await Promise.all([createDistributedEngine(config), createDistributedEngine(config)]);
}, 120_000);

afterAll(async () => {
  for (const built of [a, b]) {
    await built?.engine.close().catch(() => undefined);
    await built?.release();
  }
  await redis?.stop();
  await rm(workspaces, { recursive: true, force: true });
});

/** Reads the round until `ok` holds; the failure shows the last view read. */
async function readUntil(read: () => Promise<RoundView | null>, ok: (v: RoundView | null) => boolean, what: string) {
  let last: RoundView | null = null;
  const held = await until(
    async () => {
      last = await read();
      return ok(last) ? { view: last } : undefined;
    },
    { what: () => `${what} (last: ${JSON.stringify(last)})` },
  );
  return held.view;
}

describe('an async round seen and cancelled through another coordinator', () => {
  it('shows waiting_for_input there, and cancelRound there ends this round alone, its call cancelled', async () => {
    const session = `cancel-round-${Date.now()}`;
    await a.engine.putSession(session, { provider: 'claude-code', clientTools: [PICK] });
    const setup = [{ id: 'f', name: 'find_tools', args: { names: ['pick_file'] } }];
    await a.engine.submitRound({ session, run: 'setup', calls: setup });
    const calls = [{ id: 'p', name: 'pick_file', args: {} }];
    const one = await a.engine.submitRoundAsync({ session, run: 'r1', calls });
    const two = await a.engine.submitRoundAsync({
      session,
      run: 'r1',
      calls: [{ id: 'q', name: 'pick_file', args: {} }],
    });
    if (one.status !== 'running' || two.status !== 'running') throw new Error('expected both running');
    const parked = (v: RoundView | null) => v?.status === 'running' && v.calls[0]?.state === 'waiting_for_input';
    await readUntil(
      () => b.engine.getRound(session, 'r1', one.round),
      parked,
      'parked, seen from the other coordinator',
    );
    // The second waits behind the first (a client tool is serial: the run's serial lane).
    const queued = await b.engine.getRound(session, 'r1', two.round);
    expect(queued?.status === 'running' && queued.calls[0]?.state).toBe('queued');
    expect(await b.engine.cancelRound(session, 'r1', one.round)).toBe(1);
    const ended = await b.engine.getRound(session, 'r1', one.round, { waitMs: 30_000 });
    expect(ended?.status === 'done' && ended.response.results[0]).toMatchObject({
      id: 'p',
      status: 'error',
      error: { code: 'cancelled' },
    });
    // The other round of the run goes on: parked now that the lane is free.
    await readUntil(() => a.engine.getRound(session, 'r1', two.round), parked, 'the second parked');
    expect(await b.engine.cancelRun(session, 'r1')).toBe(1);
    expect((await a.engine.getRound(session, 'r1', two.round, { waitMs: 30_000 }))?.status).toBe('done');
  }, 120_000);
});
