import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../support/redis.js';
import { ATTACKS, hostProcesses, LIMITS, type Probe, startProbe } from './attacks.js';
import {
  type Deployment,
  type DeploymentMode,
  metricsOf,
  type Planted,
  plant,
  removePlanted,
  runnerAlive,
  session,
  startDeployment,
} from './deployment.js';

// API.md v1.3 "Sandboxed commands", through the real HTTP API and real processes: `dev` in
// embedded mode, a coordinator and a worker on a real Redis in distributed mode. Each attack runs
// with TD_SANDBOX=off first (it must succeed there, else the case proves nothing), then with the
// sandbox on (the default), where it must not.

describe.each(['embedded', 'distributed'] as DeploymentMode[])('sandboxed commands in %s mode', (mode) => {
  let planted: Planted;
  let redis: TestRedis | undefined;
  let probe: Probe;
  let on: Deployment;
  let off: Deployment;

  beforeAll(async () => {
    planted = plant();
    probe = await startProbe();
    if (mode === 'distributed') redis = await startRedis();
    const shared = redis ? { redis } : {};
    [on, off] = await Promise.all([
      startDeployment(mode, planted, LIMITS, shared),
      startDeployment(mode, planted, { ...LIMITS, TD_SANDBOX: 'off' }, shared),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
    await redis?.stop();
    probe?.server.close();
    if (planted) removePlanted(planted);
  }, 60_000);

  it.each(ATTACKS)('%s: done with TD_SANDBOX=off, refused with the sandbox on', async (_name, attack) => {
    const unconfined = await attack({ d: off, probe, a: await session(off, 'a') });
    expect(unconfined, 'with TD_SANDBOX=off every target is reached (else the case proves nothing)').toEqual(
      Object.fromEntries(Object.keys(unconfined).map((k) => [k, true])),
    );
    const confined = await attack({ d: on, probe, a: await session(on, 'a') });
    expect(confined).toEqual(Object.fromEntries(Object.keys(confined).map((k) => [k, false])));
    expect(runnerAlive(on)).toBe(true);
  });

  // Gated: with TD_SANDBOX=off `kill -9 -1` as root would take the host down; the attack above
  // ("sees and signals the worker") shows the worker signalled when unconfined.
  it('keeps the worker alive through kill -9 -1, and the next call runs', async () => {
    const a = await session(on, 'a');
    const r = await a.sh('kill -9 -1; sleep 0.2; echo after');
    expect(['ok', 'error']).toContain(r.status);
    expect(runnerAlive(on)).toBe(true);
    expect(await a.out('echo next')).toBe('next\n');
  });

  it('counts td_worker_sandbox for the mode', async () => {
    expect(await metricsOf(on)).toMatch(/^td_worker_sandbox\{mode="on"\} 1$/m);
    expect(await metricsOf(on)).toMatch(/^td_worker_sandbox\{mode="off"\} 0$/m);
    expect(await metricsOf(off)).toMatch(/^td_worker_sandbox\{mode="off"\} 1$/m);
  });

  /** What `list` gives once it is empty, or at the deadline: a sandbox's processes go with its namespace's teardown. */
  async function goneWithin(list: () => number[], ms: number): Promise<number[]> {
    const end = Date.now() + ms;
    let left = list();
    while (left.length > 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      left = list();
    }
    return left;
  }

  it('ends everything a timed-out or cancelled command started', async () => {
    const a = await session(on, 'a');
    const m1 = `66.${Math.floor(Math.random() * 1e9)}`;
    const timedOut = await a.sh(`setsid sleep ${m1} & sleep 30`, 500);
    expect(timedOut).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    expect(await goneWithin(() => hostProcesses(m1), 5000)).toEqual([]);
    const m2 = `67.${Math.floor(Math.random() * 1e9)}`;
    const run = `r-cancel-${Date.now()}`;
    const call = a.sh(`setsid sleep ${m2} & sleep 30`, undefined, run);
    for (let i = 0; i < 100 && hostProcesses(m2).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await a.api('DELETE', `/v1/sessions/${a.id}/runs/${run}`)).status).toBe(200);
    expect(await call).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(await goneWithin(() => hostProcesses(m2), 5000)).toEqual([]);
  });

  describe('what still works inside', () => {
    it('git init, add and commit in the workspace', async () => {
      const a = await session(on, 'a');
      const o = await a.out(
        'git init -q repo && cd repo && echo hello > a.txt && git add a.txt && git -c user.name=s -c user.email=s@example.invalid commit -q -m first && git log --oneline | wc -l',
      );
      expect(o.trim()).toBe('1');
      expect(existsSync(path.join(a.workspace, 'repo', '.git', 'HEAD'))).toBe(true);
    });

    it('node, python3, make and a C compile; exit codes and stderr', async () => {
      const a = await session(on, 'a');
      expect(await a.out(`node -e "console.log(6 * 7)"`)).toBe('42\n');
      expect(await a.out(`python3 -c "print(sum(range(10)))"`)).toBe('45\n');
      writeFileSync(
        path.join(a.workspace, 'hi.c'),
        '#include <stdio.h>\nint main(void) { puts("compiled"); return 3; }\n',
      );
      writeFileSync(path.join(a.workspace, 'Makefile'), 'hi: hi.c\n\tgcc -o hi hi.c\n');
      const r = await a.sh('make -s && ./hi; echo oops >&2');
      expect(r).toMatchObject({ status: 'ok', output: { exitCode: 0, stdout: 'compiled\n', stderr: 'oops\n' } });
      expect((await a.sh('./hi')).output.exitCode).toBe(3);
    });

    it('a file made executable in one call runs in a later one; it keeps its content and mode for read_files', async () => {
      const a = await session(on, 'a');
      await a.out(`printf '#!/bin/sh\\necho from-script\\n' > run.sh && chmod 750 run.sh`);
      expect(await a.out('./run.sh')).toBe('from-script\n');
      expect(statSync(path.join(a.workspace, 'run.sh')).mode & 0o777).toBe(0o750);
      const [read] = await a.round([
        { id: 'r', name: 'run_tool', args: { name: 'read_files', args: { paths: ['run.sh'] } } },
      ]);
      expect(JSON.stringify(read.output)).toContain('from-script');
    });

    it('a command changes a file the worker wrote (root-owned) in the workspace', async () => {
      const a = await session(on, 'a');
      writeFileSync(path.join(a.workspace, 'owned.txt'), 'one\n');
      expect(await a.out('echo two >> owned.txt && cat owned.txt && id -u')).toMatch(/^one\ntwo\n(?!0\n)\d+\n$/);
    });
  });
});
