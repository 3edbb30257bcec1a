import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_STREAM_BYTES, resolveSandboxConfig } from '@tool-dispatch/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { processSandbox } from '../sandbox/default.js';
import { OffSandbox } from '../sandbox/off.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { createRunCommand, KILL_GRACE_MS, runCommand } from './run-command.js';

let ws: { dir: string; cleanup: () => Promise<void> };

beforeEach(async () => {
  ws = await makeWorkspace();
});
afterEach(async () => {
  await ws.cleanup();
});

let seq = 0;
/** A `sleep` whose host process can be found by its argument (pids inside a sandbox are not the host's). */
function markedSleep(): { cmd: string; marker: string } {
  const marker = `30.${process.pid}${++seq}${Math.floor(Math.random() * 1e6)}`;
  return { cmd: `sleep ${marker}`, marker };
}

/** Host pids of live (not zombie) processes whose command line has `marker` as an argument. */
async function hostProcesses(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const cmdline = await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.split('\0').includes(marker)) continue;
    const stat = await readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    if (stat && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') pids.push(Number(e));
  }
  return pids;
}

async function waitRunning(marker: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await hostProcesses(marker)).length > 0) return;
    await sleep(20);
  }
  throw new Error(`sleep ${marker} never started`);
}

const off = new OffSandbox({ memoryMb: 1024, pids: 256, fileMb: 1024 });
const modes: [string, () => Promise<Sandbox>][] = [
  ['with the sandbox on (the default)', processSandbox],
  ['with TD_SANDBOX=off', async () => off],
];

it('runs in the sandbox by default (TD_SANDBOX unset)', async () => {
  expect(resolveSandboxConfig({}, {}).mode).toBe('on');
  expect((await processSandbox()).mode).toBe('on');
  const out = await runCommand({ command: 'id -u' }, makeContext(ws.dir));
  expect(out.stdout.trim()).not.toBe('0');
});

describe.each(modes)('run_command %s', (mode, sandboxOf) => {
  const isOn = mode.includes('on (');
  const run = (args: Record<string, unknown>, ctx = makeContext(ws.dir)) =>
    createRunCommand(sandboxOf())(args, ctx) as ReturnType<typeof runCommand>;

  it('runs sh in the workspace and returns exit code, stdout and stderr', async () => {
    await writeFile(path.join(ws.dir, 'hello.txt'), 'hi from the workspace');
    const out = await run({ command: 'cat hello.txt; echo oops >&2; exit 3' });
    expect(out).toEqual({ exitCode: 3, stdout: 'hi from the workspace', stderr: 'oops\n' });
  });

  it('reports a non-zero exit as a normal output', async () => {
    await expect(run({ command: 'false' })).resolves.toMatchObject({ exitCode: 1 });
  });

  it('closes stdin', async () => {
    const out = await run({ command: 'cat; echo "eof:$?"' });
    expect(out.stdout).toBe('eof:0\n');
  });

  it('does not pass the worker environment through', async () => {
    process.env.TD_TEST_SECRET = 'hunter2';
    try {
      const out = await run({ command: 'echo "[$TD_TEST_SECRET]"; command -v sh >/dev/null && echo path-ok' });
      expect(out.stdout).toBe('[]\npath-ok\n');
    } finally {
      delete process.env.TD_TEST_SECRET;
    }
  });

  it('reports a command killed by a signal with 128 + the signal number', async () => {
    const out = await run({ command: 'kill -9 $$' });
    // In the sandbox the shell is not the worker's child: only its status (128 + 9) comes out.
    expect(out).toMatchObject(isOn ? { exitCode: 137 } : { exitCode: 137, signal: 'SIGKILL' });
  });

  it('keeps the head of stdout past MAX_STREAM_BYTES and flags it truncated', async () => {
    const out = await run({ command: `head -c ${MAX_STREAM_BYTES + 1000} /dev/zero | tr '\\0' a; echo tail >&2` });
    expect(out.stdout).toHaveLength(MAX_STREAM_BYTES);
    expect(out.stdoutTruncated).toBe(true);
    expect(out.stderr).toBe('tail\n');
    expect(out.stderrTruncated).toBeUndefined();
  });

  it('returns when the shell exits even though a background child still holds its stdout', async () => {
    const bg = markedSleep();
    const started = Date.now();
    const out = await run({ command: `${bg.cmd} & echo done` });
    expect(out).toMatchObject({ exitCode: 0, stdout: 'done\n' });
    expect(Date.now() - started).toBeLessThan(5000);
    // API.md v1.3: in the sandbox the call's end ends everything the command started.
    if (isOn) expect(await hostProcesses(bg.marker)).toEqual([]);
    else for (const pid of await hostProcesses(bg.marker)) process.kill(pid, 'SIGKILL');
  });

  describe('when the command passes its timeout', () => {
    it('kills the whole process group, background children included, and fails with timeout', async () => {
      const bg = markedSleep();
      const call = run({ command: `${bg.cmd} & echo started; sleep 30`, timeoutMs: 1500 });
      const ended = call.then(
        () => Date.now(),
        () => Date.now(),
      );
      await waitRunning(bg.marker);
      // Measured from when the command was seen running (a spawn under load takes its own time).
      const running = Date.now();
      await expect(call).rejects.toMatchObject({
        code: 'timeout',
        message: 'the command timed out after 1500 ms; its process group was killed',
        details: { stdout: 'started\n', stderr: '' },
      });
      expect(await hostProcesses(bg.marker)).toEqual([]);
      // Every member died on SIGTERM (zombies awaiting their reaper count as dead): no SIGKILL grace.
      expect((await ended) - running).toBeLessThan(1500 + KILL_GRACE_MS);
    });

    it('uses SIGKILL on a process group member that ignores SIGTERM', async () => {
      const bg = markedSleep();
      const command = `(trap '' TERM; exec ${bg.cmd}) & wait`;
      const started = Date.now();
      // Long enough for the child to be seen running before its deadline, even under load.
      const call = run({ command, timeoutMs: 1500 });
      await waitRunning(bg.marker);
      await expect(call).rejects.toMatchObject({ code: 'timeout' });
      // Off: the group gets its grace; on: the shell's end ends the sandbox, the stubborn child with it.
      if (!isOn) expect(Date.now() - started).toBeGreaterThanOrEqual(1500 + KILL_GRACE_MS - 50);
      await sleep(50);
      expect(await hostProcesses(bg.marker)).toEqual([]);
    });

    it("uses the context's deadline when the args give none", async () => {
      const ctx = makeContext(ws.dir, { timeoutMs: 200 });
      await expect(run({ command: 'sleep 30' }, ctx)).rejects.toMatchObject({ code: 'timeout' });
    });
  });

  describe('when the call is cancelled', () => {
    it('kills the process group and fails with cancelled', async () => {
      const controller = new AbortController();
      const ctx = makeContext(ws.dir, { signal: controller.signal });
      const bg = markedSleep();
      const call = run({ command: `${bg.cmd} & sleep 30` }, ctx);
      await waitRunning(bg.marker);
      controller.abort();
      await expect(call).rejects.toMatchObject({ code: 'cancelled', message: expect.stringMatching(/cancelled/) });
      expect(await hostProcesses(bg.marker)).toEqual([]);
    });

    it('reports timeout when the signal was aborted by a deadline', async () => {
      const ctx = makeContext(ws.dir, { signal: AbortSignal.timeout(150) });
      await expect(run({ command: 'sleep 30' }, ctx)).rejects.toMatchObject({ code: 'timeout' });
    });

    it('does not start a command when the signal is already aborted', async () => {
      const ctx = makeContext(ws.dir, { signal: AbortSignal.abort() });
      await expect(run({ command: 'touch ran' }, ctx)).rejects.toMatchObject({ code: 'cancelled' });
      await expect(readFile(path.join(ws.dir, 'ran'))).rejects.toMatchObject({ code: 'ENOENT' });
    });
  });

  it('rejects a timeoutMs that is not a positive integer', async () => {
    await expect(run({ command: 'true', timeoutMs: -1 })).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/args\.timeoutMs must be an integer/),
    });
  });
});
