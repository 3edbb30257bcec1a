import { describe, expect, it } from 'vitest';
import { type BwrapPlan, bwrapArgs, SANDBOX_UID } from './bwrap-args.js';
import { sandboxEnv } from './sandbox.js';

const plan: BwrapPlan = {
  system: [
    { path: '/usr', kind: 'dir' },
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
    { path: '/etc', kind: 'dir' },
  ],
  hiddenFiles: ['/etc/shadow'],
  unreadable: '/run/td/unreadable',
  hiddenDirs: ['/etc/ssl/private'],
  read: [{ src: '/opt/tools', dest: '/opt/tools' }],
  workdir: '/tmp/ws/ta/s1',
  net: 'none',
  env: { PATH: '/usr/bin', HOME: '/tmp/home' },
  argv: ['sh', '-c', 'true'],
};

/** The index of `flag` followed by `values` in `args`, or -1. */
function at(args: string[], ...seq: string[]): number {
  return args.findIndex((_, i) => seq.every((s, j) => args[i + j] === s));
}

describe('bwrapArgs', () => {
  const args = bwrapArgs(plan);

  it('makes new user, pid, net, ipc, uts and cgroup namespaces, drops every capability, dies with the worker', () => {
    for (const flag of [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--die-with-parent',
      '--new-session',
    ])
      expect(args).toContain(flag);
    expect(at(args, '--cap-drop', 'ALL')).toBeGreaterThanOrEqual(0);
    expect(at(args, '--uid', String(SANDBOX_UID))).toBeGreaterThanOrEqual(0);
    expect(SANDBOX_UID).not.toBe(0);
  });

  it('keeps the host network only for net host', () => {
    expect(bwrapArgs({ ...plan, net: 'host' })).not.toContain('--unshare-net');
  });

  it('binds the system read-only, recreates symlinks and hides credentials on top of /etc', () => {
    expect(at(args, '--ro-bind', '/usr', '/usr')).toBeGreaterThanOrEqual(0);
    expect(at(args, '--symlink', 'usr/bin', '/bin')).toBeGreaterThanOrEqual(0);
    expect(at(args, '--ro-bind', '/run/td/unreadable', '/etc/shadow')).toBeGreaterThan(
      at(args, '--ro-bind', '/etc', '/etc'),
    );
    expect(at(args, '--tmpfs', '/etc/ssl/private')).toBeGreaterThan(at(args, '--ro-bind', '/etc', '/etc'));
  });

  it('mounts the workspace read-write at its own path after the private /tmp, and works there', () => {
    const tmp = at(args, '--tmpfs', '/tmp');
    expect(tmp).toBeGreaterThanOrEqual(0);
    expect(at(args, '--bind', plan.workdir, plan.workdir)).toBeGreaterThan(tmp);
    expect(at(args, '--ro-bind', '/opt/tools', '/opt/tools')).toBeGreaterThan(tmp);
    expect(at(args, '--chdir', plan.workdir)).toBeGreaterThanOrEqual(0);
    expect(at(args, '--proc', '/proc')).toBeGreaterThanOrEqual(0);
    expect(at(args, '--dev', '/dev')).toBeGreaterThanOrEqual(0);
    expect(args).not.toContain('/sys');
  });

  it('clears the environment to the plan and ends with the argv', () => {
    expect(args).toContain('--clearenv');
    expect(at(args, '--setenv', 'HOME', '/tmp/home')).toBeGreaterThan(args.indexOf('--clearenv'));
    expect(args.slice(-4)).toEqual(['--', 'sh', '-c', 'true']);
  });
});

describe('sandboxEnv', () => {
  it("passes only PATH, LANG, LC_*, TERM and TZ of the worker's", () => {
    const env = sandboxEnv(
      { HOME: '/tmp/home' },
      { PATH: '/p', LC_ALL: 'C', REDIS_URL: 'redis://x', TD_API_TOKENS: '/t', HOME: '/root', LANG: 'C.UTF-8' },
    );
    expect(env).toEqual({ PATH: '/p', LC_ALL: 'C', LANG: 'C.UTF-8', HOME: '/tmp/home' });
  });
});
