import type { ChildProcess } from 'node:child_process';
import type { SandboxNet } from '@tool-dispatch/shared';

/** td_worker_sandbox's `mode`: what a worker's commands run in. */
export type SandboxMode = 'on' | 'off' | 'unavailable';

/** The limits of one sandbox (TD_SANDBOX_MEMORY_MB, TD_SANDBOX_PIDS, TD_SANDBOX_FILE_MB). */
export interface SandboxLimits {
  memoryMb: number;
  pids: number;
  fileMb: number;
}

/** "Run this argv in this directory under these limits": what a caller asks a sandbox for. */
export interface LaunchSpec {
  /** The program and its arguments (a PATH lookup inside the sandbox). */
  argv: readonly string[];
  /** Read-write at its own absolute path, and the working directory. */
  workdir: string;
  /** More host paths bound read-only (an MCP server's `read`), besides the sandbox's own. */
  read?: readonly string[];
  /** The network; absent: the sandbox's (TD_SANDBOX_NET). */
  net?: SandboxNet;
  /** `pipe` for a process spoken to on stdin (an MCP server); default `ignore`. */
  stdin?: 'ignore' | 'pipe';
}

/** A limit whose crossing ends the whole sandbox (the others only make a syscall fail inside). */
export type KillingLimit = 'memory';

/** A process started in a sandbox, and the handle on everything it starts. */
export interface Confined {
  readonly child: ChildProcess;
  /** Settles once a limit that kills whole was crossed (the sandbox is then killed). */
  readonly overLimit: Promise<KillingLimit>;
  /**
   * Ends everything the process started: SIGTERM to the command's processes, SIGKILL to what is
   * left after `graceMs`; resolves once nothing of it runs.
   */
  kill(graceMs: number): Promise<void>;
  /** After the process exited: waits for the rest to be gone, frees the sandbox, says which limit killed it. */
  finish(): Promise<{ limit?: KillingLimit }>;
}

/** A launch whose process the caller spawns itself (an MCP SDK transport): what to spawn, and the clean-up after. */
export interface PreparedLaunch {
  command: string;
  args: string[];
  /** The spawning process's environment (the sandbox sets the inside's itself). */
  env: Record<string, string>;
  /** After the process exited (or to end it): kills what is left, frees the sandbox. */
  release(): Promise<void>;
}

/** The seam a `run_command` (or an MCP server) runs through; bwrap today, a gVisor or microVM back end later. */
export interface Sandbox {
  readonly mode: SandboxMode;
  /** Mode `unavailable`: why there is no sandbox, and the fix (logged once; each launch fails with it). */
  readonly problem?: string;
  readonly limits: SandboxLimits;
  /** Starts `spec` confined; throws a `ToolError` (`sandbox_unavailable`) when it cannot be confined. */
  launch(spec: LaunchSpec): Promise<Confined>;
  /** The same confinement as `launch`, spawned by the caller; `spec.env` adds variables inside. */
  prepare(spec: LaunchSpec & { env?: Record<string, string> }): Promise<PreparedLaunch>;
  close(): Promise<void>;
}

/** Variables a sandboxed process may see of the worker's (API.md v1.3); HOME, TMPDIR and USER are the sandbox's. */
export const PASSED_ENV_NAMES = ['PATH', 'LANG', 'TERM', 'TZ'] as const;
export const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The environment of a sandboxed process: PATH, LANG, LC_*, TERM, TZ of the worker's, plus `own`. */
export function sandboxEnv(own: Record<string, string>, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if ((PASSED_ENV_NAMES as readonly string[]).includes(key) || /^LC_[A-Z_]+$/.test(key)) env[key] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  return { ...env, ...own };
}
