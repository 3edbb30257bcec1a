import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HandlerContext } from '@tool-dispatch/shared';
import { MAX_STREAM_BYTES, ToolError } from '@tool-dispatch/shared';
import { abortError } from '../support/abort.js';
import { optionalPositiveInt, requireString } from '../support/args.js';
import { CappedText } from '../support/capped-text.js';
import { errorCode } from '../support/node-error.js';
import { resolveInWorkspace } from '../support/workspace.js';

/** After SIGTERM, how long the process group gets to exit before SIGKILL. */
export const KILL_GRACE_MS = 1000;
/** After the shell exits, how long to wait for its pipes to close (a background child may hold them). */
const DRAIN_AFTER_EXIT_MS = 300;
const GROUP_POLL_MS = 25;
const MAX_TIMEOUT_MS = 3_600_000;

/** The only variables a command sees: the worker's own environment holds credentials (REDIS_URL…). */
const PASSED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'TERM'];

export interface RunCommandOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Set when a signal ended the command; exitCode is then 128 + its number, as sh reports it. */
  signal?: string;
  stdoutTruncated?: true;
  stderrTruncated?: true;
}

/**
 * run_command: `sh -c command` in the workspace, stdin closed, in its own process group.
 * A non-zero exit is a normal output. Past the deadline (args.timeoutMs, else ctx.timeoutMs)
 * or on abort, the whole group gets SIGTERM, then SIGKILL, and the call fails.
 */
export async function runCommand(args: Record<string, unknown>, ctx: HandlerContext): Promise<RunCommandOutput> {
  const command = requireString(args, 'command');
  const timeoutMs = optionalPositiveInt(args, 'timeoutMs', MAX_TIMEOUT_MS) ?? ctx.timeoutMs;
  const cwd = await resolveInWorkspace(ctx.workspace, '.');
  if (ctx.signal.aborted) throw abortError(ctx.signal, 'the command did not start');

  const child = spawn('sh', ['-c', command], {
    cwd,
    detached: true, // own process group, so the whole tree can be killed
    stdio: ['ignore', 'pipe', 'pipe'],
    env: commandEnv(),
  });
  const stdout = new CappedText(MAX_STREAM_BYTES);
  const stderr = new CappedText(MAX_STREAM_BYTES);
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = waitForExit(child);
  const closed = waitForClose(child); // listen now: 'close' can follow 'exit' in the same tick

  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort('timeout'), timeoutMs);
  const onAbort = () => stop.abort('abort');
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const ended = await Promise.race([exited, waitForAbort(stop.signal)]);
    if (ended === 'stopped') {
      await killGroup(child);
      const partial = { stdout: stdout.text(), stderr: stderr.text() };
      if (stop.signal.reason === 'timeout') {
        throw new ToolError(
          'timeout',
          `the command timed out after ${timeoutMs} ms; its process group was killed`,
          partial,
        );
      }
      throw abortError(ctx.signal, 'the command was stopped and its process group killed', partial);
    }
    await Promise.race([closed, sleep(DRAIN_AFTER_EXIT_MS)]);
    return toOutput(ended, stdout, stderr);
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
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

/** SIGTERM to the group, then SIGKILL to whatever is left of it after the grace period. */
async function killGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  if (!signalGroup(pid, 'SIGTERM')) return;
  const deadline = Date.now() + KILL_GRACE_MS;
  while (Date.now() < deadline) {
    await sleep(GROUP_POLL_MS);
    if (!(await hasLiveMembers(pid))) return;
  }
  signalGroup(pid, 'SIGKILL');
}

/** Signals the process group led by `pid`; false when the group no longer exists. */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (e) {
    if (errorCode(e) === 'ESRCH') return false;
    throw e;
  }
}

/**
 * Whether the process group still has a member that is not a zombie. Orphaned children are
 * reaped by PID 1, which in a container may be slow or never do it; their zombies are dead.
 */
async function hasLiveMembers(pgid: number): Promise<boolean> {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return true; // no procfs: the group exists, so count it as alive
  }
  const states = await Promise.all(
    entries.filter((e) => /^\d+$/.test(e)).map((e) => readFile(`/proc/${e}/stat`, 'utf8').catch(() => '')),
  );
  return states.some((stat) => {
    // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[2] === String(pgid) && fields[0] !== 'Z';
  });
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

function commandEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of PASSED_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return env;
}
