import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ToolError } from '@tool-dispatch/shared';
import { errorCode } from '../support/node-error.js';
import type { Confined, KillingLimit, LaunchSpec, PreparedLaunch, Sandbox, SandboxLimits } from './sandbox.js';

const GROUP_POLL_MS = 25;
/** What a command saw of the worker's environment before v1.3 (TD_SANDBOX=off keeps it). */
const OFF_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'TERM'];

/** TD_SANDBOX=off: a process group of its own, as before v1.3 (for a worker that is itself the sandbox). */
export class OffSandbox implements Sandbox {
  readonly mode = 'off' as const;
  constructor(readonly limits: SandboxLimits) {}

  async launch(spec: LaunchSpec): Promise<Confined> {
    const [program, ...args] = spec.argv;
    if (program === undefined) throw new ToolError('handler_error', 'nothing to run');
    const child = spawn(program, args, {
      cwd: spec.workdir,
      detached: true, // own process group, so the whole tree can be killed
      stdio: [spec.stdin ?? 'ignore', 'pipe', 'pipe'],
      env: offEnv(),
    });
    return {
      child,
      overLimit: new Promise<KillingLimit>(() => {}),
      kill: (graceMs) => killGroup(child, graceMs),
      finish: async () => ({}),
    };
  }

  async prepare(spec: LaunchSpec & { env?: Record<string, string> }): Promise<PreparedLaunch> {
    const [command, ...args] = spec.argv;
    if (command === undefined) throw new ToolError('handler_error', 'nothing to run');
    return {
      command,
      args,
      env: { ...(offEnv() as Record<string, string>), ...(spec.env ?? {}) },
      release: async () => {},
    };
  }

  async close(): Promise<void> {}
}

function offEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of OFF_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return env;
}

/** SIGTERM to the group, then SIGKILL to whatever is left of it after the grace period. */
async function killGroup(child: ChildProcess, graceMs: number): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  if (!signalGroup(pid, 'SIGTERM')) return;
  const deadline = Date.now() + graceMs;
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

/** No sandbox could be made (TD_SANDBOX on): every launch fails with the probe's problem, nothing run. */
export class UnavailableSandbox implements Sandbox {
  readonly mode = 'unavailable' as const;
  constructor(
    readonly problem: string,
    readonly limits: SandboxLimits,
  ) {}

  async launch(): Promise<Confined> {
    throw new ToolError('sandbox_unavailable', this.problem);
  }

  async prepare(): Promise<PreparedLaunch> {
    throw new ToolError('sandbox_unavailable', this.problem);
  }

  async close(): Promise<void> {}
}
