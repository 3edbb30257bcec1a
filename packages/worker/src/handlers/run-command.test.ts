import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_STREAM_BYTES } from '@tool-dispatch/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { KILL_GRACE_MS, runCommand } from './run-command.js';

let ws: { dir: string; cleanup: () => Promise<void> };
const spawnedPids: number[] = [];

beforeEach(async () => {
  ws = await makeWorkspace();
});
afterEach(async () => {
  for (const pid of spawnedPids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  await ws.cleanup();
});

/** Alive means running or sleeping; a zombie (exited, not yet reaped by its new parent) is dead. */
async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function readPid(file: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const text = await readFile(path.join(ws.dir, file), 'utf8').catch(() => '');
    if (text.trim()) {
      const pid = Number(text.trim());
      spawnedPids.push(pid);
      return pid;
    }
    await sleep(20);
  }
  throw new Error(`${file} was never written`);
}

describe('run_command', () => {
  it('runs sh in the workspace and returns exit code, stdout and stderr', async () => {
    await writeFile(path.join(ws.dir, 'hello.txt'), 'hi from the workspace');
    const out = await runCommand({ command: 'cat hello.txt; echo oops >&2; exit 3' }, makeContext(ws.dir));
    expect(out).toEqual({ exitCode: 3, stdout: 'hi from the workspace', stderr: 'oops\n' });
  });

  it('reports a non-zero exit as a normal output', async () => {
    await expect(runCommand({ command: 'false' }, makeContext(ws.dir))).resolves.toMatchObject({ exitCode: 1 });
  });

  it('closes stdin', async () => {
    const out = await runCommand({ command: 'cat; echo "eof:$?"' }, makeContext(ws.dir));
    expect(out.stdout).toBe('eof:0\n');
  });

  it('does not pass the worker environment through', async () => {
    process.env.TD_TEST_SECRET = 'hunter2';
    try {
      const out = await runCommand(
        { command: 'echo "[$TD_TEST_SECRET]"; command -v sh >/dev/null && echo path-ok' },
        makeContext(ws.dir),
      );
      expect(out.stdout).toBe('[]\npath-ok\n');
    } finally {
      delete process.env.TD_TEST_SECRET;
    }
  });

  it('reports a command killed by a signal with 128 + the signal number', async () => {
    const out = await runCommand({ command: 'kill -9 $$' }, makeContext(ws.dir));
    expect(out).toMatchObject({ exitCode: 137, signal: 'SIGKILL' });
  });

  it('keeps the head of stdout past MAX_STREAM_BYTES and flags it truncated', async () => {
    const out = await runCommand(
      { command: `head -c ${MAX_STREAM_BYTES + 1000} /dev/zero | tr '\\0' a; echo tail >&2` },
      makeContext(ws.dir),
    );
    expect(out.stdout).toHaveLength(MAX_STREAM_BYTES);
    expect(out.stdoutTruncated).toBe(true);
    expect(out.stderr).toBe('tail\n');
    expect(out.stderrTruncated).toBeUndefined();
  });

  it('returns when the shell exits even though a background child still holds its stdout', async () => {
    const started = Date.now();
    const out = await runCommand({ command: 'sleep 20 & echo $! > bg.pid; echo done' }, makeContext(ws.dir));
    await readPid('bg.pid');
    expect(out).toMatchObject({ exitCode: 0, stdout: 'done\n' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  describe('when the command passes its timeout', () => {
    it('kills the whole process group, background children included, and fails with timeout', async () => {
      const ctx = makeContext(ws.dir);
      const started = Date.now();
      const call = runCommand({ command: 'sleep 30 & echo $! > bg.pid; echo started; sleep 30', timeoutMs: 400 }, ctx);
      await expect(call).rejects.toMatchObject({
        code: 'timeout',
        message: 'the command timed out after 400 ms; its process group was killed',
        details: { stdout: 'started\n', stderr: '' },
      });
      const bg = await readPid('bg.pid');
      expect(await isAlive(bg)).toBe(false);
      // Every member died on SIGTERM (zombies awaiting their reaper count as dead): no SIGKILL grace.
      expect(Date.now() - started).toBeLessThan(400 + KILL_GRACE_MS);
    });

    it('uses SIGKILL on a process group member that ignores SIGTERM', async () => {
      const command = `(trap '' TERM; exec sleep 30) & echo $! > bg.pid; wait`;
      const started = Date.now();
      await expect(runCommand({ command, timeoutMs: 300 }, makeContext(ws.dir))).rejects.toMatchObject({
        code: 'timeout',
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(300 + KILL_GRACE_MS - 50);
      const bg = await readPid('bg.pid');
      await sleep(50);
      expect(await isAlive(bg)).toBe(false);
    });

    it("uses the context's deadline when the args give none", async () => {
      const ctx = makeContext(ws.dir, { timeoutMs: 200 });
      await expect(runCommand({ command: 'sleep 30' }, ctx)).rejects.toMatchObject({ code: 'timeout' });
    });
  });

  describe('when the call is cancelled', () => {
    it('kills the process group and fails with cancelled', async () => {
      const controller = new AbortController();
      const ctx = makeContext(ws.dir, { signal: controller.signal });
      const call = runCommand({ command: 'sleep 30 & echo $! > bg.pid; sleep 30' }, ctx);
      const bg = await readPid('bg.pid');
      controller.abort();
      await expect(call).rejects.toMatchObject({ code: 'cancelled', message: expect.stringMatching(/cancelled/) });
      expect(await isAlive(bg)).toBe(false);
    });

    it('reports timeout when the signal was aborted by a deadline', async () => {
      const ctx = makeContext(ws.dir, { signal: AbortSignal.timeout(150) });
      await expect(runCommand({ command: 'sleep 30' }, ctx)).rejects.toMatchObject({ code: 'timeout' });
    });

    it('does not start a command when the signal is already aborted', async () => {
      const ctx = makeContext(ws.dir, { signal: AbortSignal.abort() });
      await expect(runCommand({ command: 'touch ran' }, ctx)).rejects.toMatchObject({ code: 'cancelled' });
      await expect(readFile(path.join(ws.dir, 'ran'))).rejects.toMatchObject({ code: 'ENOENT' });
    });
  });

  it('rejects a timeoutMs that is not a positive integer', async () => {
    await expect(runCommand({ command: 'true', timeoutMs: -1 }, makeContext(ws.dir))).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/args\.timeoutMs must be an integer/),
    });
  });
});
