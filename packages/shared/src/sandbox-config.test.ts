import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SANDBOX_FILE_MB,
  DEFAULT_SANDBOX_MEMORY_MB,
  DEFAULT_SANDBOX_PIDS,
  resolveSandboxConfig,
} from './config.js';
import { ConfigError } from './errors.js';
import { sandboxNetOf } from './sandbox-net.js';

describe('resolveSandboxConfig (TD_SANDBOX*, API.md v1.3)', () => {
  it('defaults to on, no network, 1024 MB, 256 processes, 1024 MB files', () => {
    expect(resolveSandboxConfig({}, {})).toEqual({
      mode: 'on',
      read: [],
      net: { mode: 'none' },
      memoryMb: DEFAULT_SANDBOX_MEMORY_MB,
      pids: DEFAULT_SANDBOX_PIDS,
      fileMb: DEFAULT_SANDBOX_FILE_MB,
    });
    expect([DEFAULT_SANDBOX_MEMORY_MB, DEFAULT_SANDBOX_PIDS, DEFAULT_SANDBOX_FILE_MB]).toEqual([1024, 256, 1024]);
  });

  it('refuses any TD_SANDBOX but on and off with a ConfigError naming it (dev and worker exit 2)', () => {
    expect(resolveSandboxConfig({}, { TD_SANDBOX: 'off' }).mode).toBe('off');
    expect(() => resolveSandboxConfig({}, { TD_SANDBOX: 'bogus' })).toThrow(ConfigError);
    expect(() => resolveSandboxConfig({}, { TD_SANDBOX: 'OFF' })).toThrow(/TD_SANDBOX must be on or off, got "OFF"/);
  });

  it('reads limits as positive integers and refuses the rest', () => {
    const c = resolveSandboxConfig({}, { TD_SANDBOX_MEMORY_MB: '64', TD_SANDBOX_PIDS: '16', TD_SANDBOX_FILE_MB: '2' });
    expect([c.memoryMb, c.pids, c.fileMb]).toEqual([64, 16, 2]);
    for (const name of ['TD_SANDBOX_MEMORY_MB', 'TD_SANDBOX_PIDS', 'TD_SANDBOX_FILE_MB'])
      for (const bad of ['0', '-1', '1.5', 'x'])
        expect(() => resolveSandboxConfig({}, { [name]: bad })).toThrow(new RegExp(`${name} must be an integer`));
  });

  it('takes TD_SANDBOX_READ as absolute paths without ..', () => {
    expect(resolveSandboxConfig({}, { TD_SANDBOX_READ: '/opt/a/, /srv/b' }).read).toEqual(['/opt/a', '/srv/b']);
    expect(() => resolveSandboxConfig({}, { TD_SANDBOX_READ: 'relative' })).toThrow(/absolute host paths/);
    expect(() => resolveSandboxConfig({}, { TD_SANDBOX_READ: '/a/../etc' })).toThrow(/without '\.\.'/);
  });
});

describe('sandboxNetOf (TD_SANDBOX_NET)', () => {
  it('is none, host, or an allow list of host[:port] patterns', () => {
    expect(sandboxNetOf(undefined)).toEqual({ mode: 'none' });
    expect(sandboxNetOf('none')).toEqual({ mode: 'none' });
    expect(sandboxNetOf('host')).toEqual({ mode: 'host' });
    expect(sandboxNetOf('registry.npmjs.org, *.github.com:443')).toEqual({
      mode: 'allow',
      patterns: ['registry.npmjs.org', '*.github.com:443'],
    });
  });

  it('refuses what is not a host pattern', () => {
    for (const bad of ['http://x', 'a b', 'x:port', '*', 'host,none'])
      expect(() => sandboxNetOf(bad)).toThrow(/TD_SANDBOX_NET must be none, host, or a comma list/);
  });
});
