import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The CLI as an operator meets it (bin/tool-dispatch, after the build `pnpm test` runs first).
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const cli = (...args: string[]) =>
  spawnSync(path.join(ROOT, 'bin/tool-dispatch'), args, {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, PORT: '' },
  });

describe('the tool-dispatch command', () => {
  it('prints its version with --version', () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'packages/coordinator/package.json'), 'utf8'));
    const r = cli('--version');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(`tool-dispatch ${version}`);
  });

  it('answers an unknown command in two short lines on stderr, naming it, and exits non-zero', () => {
    const r = cli('frobnicate');
    expect(r.status).not.toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines[0]).toMatch(/unknown command 'frobnicate'/);
    expect(lines[1]).toMatch(/--help/);
    expect(r.stdout).toBe('');
  });

  it('names the bad value of an option in as few lines', () => {
    const r = cli('coordinator', '--port', 'x');
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(2);
    expect(r.stderr).toMatch(/--port/);
  });

  it('still prints every command, variable and limit with --help', () => {
    const r = cli('--help');
    expect(r.status).toBe(0);
    for (const word of ['coordinator', 'worker', 'dev', 'demo', 'REDIS_URL', 'TD_CONFIRM_TIMEOUT_MS', 'Limits:'])
      expect(r.stdout).toContain(word);
  });

  it('says TD_ROUND_RETENTION_MS and its default in --help (v1.3)', () => {
    const r = cli('--help');
    expect(r.stdout).toMatch(/TD_ROUND_RETENTION_MS .*default 86400000/s);
  });

  it('says the three Redis durability settings and their defaults in --help', () => {
    const r = cli('--help');
    for (const word of ['TD_REDIS_REPLICA_ACKS', 'TD_REDIS_WAIT_MS', 'TD_REDIS_COMMAND_TIMEOUT_MS', 'default 2000'])
      expect(r.stdout).toContain(word);
  });

  it.each([
    [{ TD_REDIS_REPLICA_ACKS: 'two' }, /TD_REDIS_REPLICA_ACKS must be an integer from 0 to 16/],
    [{ TD_JOB_CALLS: '0' }, /TD_JOB_CALLS must be an integer from 1 to 64, got "0"/],
    [{ TD_JOB_CALLS: '65' }, /TD_JOB_CALLS must be an integer from 1 to 64, got "65"/],
    [{ TD_REDIS_COMMAND_TIMEOUT_MS: '10' }, /TD_REDIS_COMMAND_TIMEOUT_MS must be at least 100 ms/],
    [{ TD_ROUND_RETENTION_MS: '0' }, /TD_ROUND_RETENTION_MS must be a positive integer, got "0"/],
    [
      { TD_REDIS_REPLICA_ACKS: '1', TD_REDIS_WAIT_MS: '3000' },
      /TD_REDIS_WAIT_MS \(3000\) must be below TD_REDIS_COMMAND_TIMEOUT_MS \(2000\)/,
    ],
  ])('exits 2 naming the problem for %j', (env, problem) => {
    for (const command of ['coordinator', 'worker']) {
      const r = spawnSync(path.join(ROOT, 'bin/tool-dispatch'), [command], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, PORT: '0', REDIS_URL: 'redis://127.0.0.1:1', ...env },
      });
      expect(r.status, `${command}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(problem);
    }
  });

  it('exits 2 naming both when REDIS_URL and REDIS_CLUSTER_NODES are set (API.md)', () => {
    for (const command of ['coordinator', 'worker']) {
      const r = spawnSync(path.join(ROOT, 'bin/tool-dispatch'), [command], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, PORT: '0', REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '127.0.0.1:2' },
      });
      expect(r.status, `${command}: ${r.stderr}`).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/REDIS_URL or REDIS_CLUSTER_NODES, not both/);
    }
  });
});
