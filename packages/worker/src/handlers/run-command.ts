import type { ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Handler, HandlerContext } from '@tool-dispatch/shared';
import { MAX_STREAM_BYTES, ToolError } from '@tool-dispatch/shared';
import { processSandbox } from '../sandbox/default.js';
import type { Confined, Sandbox } from '../sandbox/sandbox.js';
import { abortError } from '../support/abort.js';
import { optionalPositiveInt, requireString } from '../support/args.js';
import { CappedText } from '../support/capped-text.js';
import { isFenced } from '../support/fenced.js';
import { resolveInWorkspace } from '../support/workspace.js';

/** After SIGTERM, how long the command's processes get to exit before SIGKILL. */
export const KILL_GRACE_MS = 1000;
/** After the shell exits, how long to wait for its pipes to close (a background child may hold them). */
const DRAIN_AFTER_EXIT_MS = 300;
const MAX_TIMEOUT_MS = 3_600_000;

export interface RunCommandOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Set when a signal ended the command (TD_SANDBOX=off); exitCode is then 128 + its number, as sh reports it. */
  signal?: string;
  stdoutTruncated?: true;
  stderrTruncated?: true;
}

/** run_command over `sandbox` (a promise: the worker's probe may still be running). */
export function createRunCommand(sandbox: Sandbox | Promise<Sandbox>): Handler {
  return function runCommandIn(args, ctx) {
    return runCommandWith(sandbox, args, ctx);
  };
}

/** run_command in this process's sandbox (TD_SANDBOX*, probed on first use). */
export function runCommand(args: Record<string, unknown>, ctx: HandlerContext): Promise<RunCommandOutput> {
  return runCommandWith(processSandbox(), args, ctx);
}

/**
 * `sh -c command` in the workspace, in a sandbox of its own (API.md v1.3), stdin closed. A
 * non-zero exit is a normal output. Past the deadline (args.timeoutMs, else ctx.timeoutMs) or on
 * abort, everything it started gets SIGTERM, then SIGKILL, and the call fails; over its memory
 * limit it is killed whole and the call ends `resource_limit`.
 */
async function runCommandWith(
  sandboxOrPromise: Sandbox | Promise<Sandbox>,
  args: Record<string, unknown>,
  ctx: HandlerContext,
): Promise<RunCommandOutput> {
  const command = requireString(args, 'command');
  const timeoutMs = optionalPositiveInt(args, 'timeoutMs', MAX_TIMEOUT_MS) ?? ctx.timeoutMs;
  const cwd = await resolveInWorkspace(ctx.workspace, '.');
  const sandbox = await sandboxOrPromise;
  if (ctx.signal.aborted) throw abortError(ctx.signal, 'the command did not start');
  const confined = await sandbox.launch({ argv: ['sh', '-c', command], workdir: cwd });
  const memoryMb = sandbox.limits.memoryMb;
  let out: RunCommandOutput;
  try {
    out = await supervise(confined, timeoutMs, ctx.signal, memoryMb);
  } catch (e) {
    await confined.finish();
    throw e;
  }
  // Waits until nothing the command started is left (API.md v1.3: the call's end ends it all).
  const { limit } = await confined.finish();
  // The kernel's OOM killer may have taken a child just as the shell exited: still a crossing.
  if (limit === 'memory') throw overMemory(memoryMb, out);
  return out;
}

// long: the one place a command's end is decided: exit, deadline, cancel or a limit, then the partial output
async function supervise(
  confined: Confined,
  timeoutMs: number,
  signal: AbortSignal,
  memoryMb: number,
): Promise<RunCommandOutput> {
  const { child } = confined;
  const stdout = new CappedText(MAX_STREAM_BYTES);
  const stderr = new CappedText(MAX_STREAM_BYTES);
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = waitForExit(child);
  const closed = waitForClose(child); // listen now: 'close' can follow 'exit' in the same tick

  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort('timeout'), timeoutMs);
  const onAbort = () => stop.abort('abort');
  signal.addEventListener('abort', onAbort, { once: true });
  const overLimit = confined.overLimit.then((limit) => ({ limit }));
  try {
    const ended = await Promise.race([exited, waitForAbort(stop.signal), overLimit]);
    const partial = () => ({ stdout: stdout.text(), stderr: stderr.text() });
    if (typeof ended === 'object' && 'limit' in ended) {
      await confined.kill(0);
      await Promise.race([closed, sleep(DRAIN_AFTER_EXIT_MS)]);
      throw overMemory(memoryMb, partial());
    }
    if (ended === 'stopped') {
      // A fenced call (its worker lost its hold on it) is killed at once: its place may soon be someone else's.
      await confined.kill(isFenced(signal.reason) ? 0 : KILL_GRACE_MS);
      if (stop.signal.reason === 'timeout') {
        throw new ToolError(
          'timeout',
          `the command timed out after ${timeoutMs} ms; its process group was killed`,
          partial(),
        );
      }
      throw abortError(signal, 'the command was stopped and its process group killed', partial());
    }
    await Promise.race([closed, sleep(DRAIN_AFTER_EXIT_MS)]);
    return toOutput(ended, stdout, stderr);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
}

function overMemory(memoryMb: number, partial: { stdout: string; stderr: string }): ToolError {
  return new ToolError(
    'resource_limit',
    `the command went over its memory limit (TD_SANDBOX_MEMORY_MB=${memoryMb}) and was killed whole`,
    { limit: 'memory', stdout: partial.stdout, stderr: partial.stderr },
  );
}

type Exit = { code: number | null; signal: NodeJS.Signals | null };

function waitForExit(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (e) => reject(new ToolError('handler_error', `could not start sh: ${e.message}`)));
  });
}

function waitForClose(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('close', () => resolve()));
}

function waitForAbort(signal: AbortSignal): Promise<'stopped'> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
}

function toOutput(exit: Exit, stdout: CappedText, stderr: CappedText): RunCommandOutput {
  const out: RunCommandOutput = {
    exitCode: exit.code ?? 128 + (exit.signal ? (osConstants.signals[exit.signal] ?? 0) : 0),
    stdout: stdout.text(),
    stderr: stderr.text(),
  };
  if (exit.code === null && exit.signal) out.signal = exit.signal;
  if (stdout.truncated) out.stdoutTruncated = true;
  if (stderr.truncated) out.stderrTruncated = true;
  return out;
}
