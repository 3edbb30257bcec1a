// Child processes of the HTTP bench (the project's `bin/tool-dispatch` processes and the peer's), and
// what /proc says about each: CPU time (utime + stime) and resident memory.

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BIN = path.join(ROOT, 'bin', 'tool-dispatch');
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_S = 100;
const START_TIMEOUT_MS = 60_000;

export interface Child {
  /** What it is in the figures: `coordinator`, `worker 1`, `peer server`… */
  label: string;
  child: ChildProcess;
  pid: number;
  output: string[];
}

/** Spawns a process in its own group and resolves once its output matches `ready`. */
export async function startChild(options: {
  label: string;
  command: string;
  args: string[];
  /** Added to this process's environment; an `undefined` value removes the variable. */
  env: Record<string, string | undefined>;
  ready: RegExp;
}): Promise<Child> {
  const env = { ...process.env, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(options.command, options.args, {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`${options.label}: no pid`);
  const proc: Child = { label: options.label, child, pid: child.pid, output: [] };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${options.label} did not start:\n${proc.output.join('')}`)),
      START_TIMEOUT_MS,
    );
    const onData = (d: Buffer) => {
      if (proc.output.length < 200) proc.output.push(d.toString());
      if (options.ready.test(proc.output.join(''))) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.label} exited (${code ?? signal}):\n${proc.output.join('').slice(-2000)}`));
    });
  });
  child.removeAllListeners('exit');
  return proc;
}

/** SIGTERM to the child's group, SIGKILL after `graceMs`; resolves once it exited. */
export async function stopChild(proc: Child, graceMs = 5_000): Promise<void> {
  const { child } = proc;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, s);
    } catch {
      /* gone */
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** CPU time (user + system) the process has used so far, in ms, from /proc/<pid>/stat. */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / TICKS_PER_S;
}

/** Resident set size in KiB, from /proc/<pid>/status. */
export function rssKibOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}
