import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcesses, type Proc } from '../support/cli-procs.js';
import { type Deployment, metricsOf, type Planted, plant, removePlanted, session } from './deployment.js';

// API.md v1.3: a worker that cannot make a sandbox still starts and serves every other tool; it
// logs the cause and the fix once, its run_command calls end sandbox_unavailable with nothing run.
// The machine's namespaces are refused by a seccomp filter (no-namespaces.py) around `dev`.

const NO_NAMESPACES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'no-namespaces.py');

describe('when no sandbox can be made (namespaces refused)', () => {
  const procs = new CliProcesses();
  let planted: Planted;
  let dev: Proc;
  let d: Deployment;

  beforeAll(async () => {
    planted = plant();
    const env = { TD_API_TOKENS: planted.tokensFile, TD_WORKSPACE_ROOT: planted.root, REDIS_URL: '' };
    dev = await procs.startUnder(['python3', NO_NAMESPACES], ['dev', '--host', '127.0.0.1'], env, /listening on/);
    d = {
      mode: 'embedded',
      planted,
      port: dev.port,
      runner: dev,
      metricsUrl: `http://127.0.0.1:${dev.port}/metrics`,
      redisUrl: undefined,
      stop: async () => {},
    };
  }, 60_000);
  afterAll(() => {
    procs.killAll('SIGKILL');
    if (planted) removePlanted(planted);
  });

  it('starts, logs the cause and the fix once, and says unavailable in td_worker_sandbox', async () => {
    const lines = dev.output
      .join('')
      .split('\n')
      .filter((l) => l.includes('sandbox unavailable'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/fix: .*bubblewrap.*TD_SANDBOX=off/);
    expect(await metricsOf(d)).toMatch(/^td_worker_sandbox\{mode="unavailable"\} 1$/m);
    expect(await metricsOf(d)).toMatch(/^td_worker_sandbox\{mode="on"\} 0$/m);
  });

  it('ends run_command sandbox_unavailable with that message, nothing run, and serves the other tools', async () => {
    const a = await session(d, 'a');
    const r = await a.sh('touch ran');
    expect(r).toMatchObject({
      status: 'error',
      error: { code: 'sandbox_unavailable', message: expect.stringMatching(/no sandbox for commands.*fix:/) },
    });
    expect(existsSync(path.join(a.workspace, 'ran'))).toBe(false);
    const [calc] = await a.round([
      { id: 'k', name: 'run_tool', args: { name: 'calculate', args: { expression: '6*7' } } },
    ]);
    expect(calc.status).toBe('ok');
  });
});
