import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveSandboxConfig } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { createSandbox, hiddenPaths } from './create.js';

describe('hiddenPaths', () => {
  it('hides the credentials and every file of /etc others may not read', async () => {
    const { hiddenFiles, hiddenDirs } = await hiddenPaths([]);
    expect(hiddenFiles).toContain('/etc/shadow');
    expect([...hiddenFiles, ...hiddenDirs]).toContain('/etc/gshadow');
  });

  it("hides a worker's file under a system dir with its directory", async () => {
    const { hiddenDirs } = await hiddenPaths(['/etc/ssl/certs/whatever.pem', '/tmp/not-bound.json']);
    expect(hiddenDirs).toContain('/etc/ssl/certs');
    expect(hiddenDirs.some((d) => d.startsWith('/tmp'))).toBe(false);
  });
});

describe('createSandbox', () => {
  const config = resolveSandboxConfig({}, {});

  it('probes and answers on here (bwrap, namespaces and cgroups at hand)', async () => {
    const s = await createSandbox(config);
    expect(s.mode).toBe('on');
  });

  it('is off for TD_SANDBOX=off', async () => {
    expect((await createSandbox({ ...config, mode: 'off' })).mode).toBe('off');
  });

  it('fails closed naming the cause and the fix when bwrap is missing', async () => {
    const s = await createSandbox(config, { bwrap: '/nonexistent/bwrap' });
    expect(s.mode).toBe('unavailable');
    expect(s.problem).toMatch(/a sandboxed probe command failed|could not be started/);
    expect(s.problem).toMatch(/fix: install bubblewrap/);
    await expect(s.launch({ argv: ['true'], workdir: '/tmp' })).rejects.toMatchObject({ code: 'sandbox_unavailable' });
  });

  it('reaches nothing but what TD_SANDBOX_NET allows, through the proxy (HTTPS_PROXY set inside)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'td-sbx-'));
    const s = await createSandbox({ ...config, net: { mode: 'allow', patterns: ['registry.example.invalid'] } });
    try {
      expect(s.mode).toBe('on');
      const c = await s.launch({ argv: ['sh', '-c', 'echo "$HTTPS_PROXY"'], workdir: dir });
      let out = '';
      c.child.stdout?.on('data', (b: Buffer) => {
        out += b.toString();
      });
      await new Promise((r) => c.child.once('close', r));
      await c.finish();
      expect(out).toMatch(/^http:\/\/127\.0\.0\.1:\d+\n$/);
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('removes the cgroup of each launch after it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'td-sbx-'));
    try {
      const s = await createSandbox(config);
      const c = await s.launch({ argv: ['sh', '-c', 'cat /proc/self/cgroup'], workdir: dir });
      let out = '';
      c.child.stdout?.on('data', (b: Buffer) => {
        out += b.toString();
      });
      await new Promise((r) => c.child.once('close', r));
      await c.finish();
      expect(out).toMatch(/memory:/); // inside its own cgroup namespace
      const { readdirSync } = await import('node:fs');
      const leftovers = readdirSync('/sys/fs/cgroup/pids', { recursive: true }).filter((p) =>
        String(p).includes(`c-${process.pid}-`),
      );
      expect(leftovers).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
