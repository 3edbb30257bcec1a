import type { SandboxNet } from '@tool-dispatch/shared';

/** The system directories bound read-only (API.md v1.3 "Files"), when they exist. */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'] as const;
/** The uid and gid inside: not 0; mapped to the worker's own, so workspace files keep working both ways. */
export const SANDBOX_UID = 1000;
export const SANDBOX_HOME = '/tmp/home';
export const SANDBOX_HOSTNAME = 'sandbox';

/** One system directory as the host has it: a directory to bind, or a symlink to recreate (merged /usr). */
export type SystemEntry = { path: string; kind: 'dir' } | { path: string; kind: 'symlink'; target: string };

/** Everything one bwrap invocation needs, as plain data (built by `bwrap.ts`, checked in tests). */
export interface BwrapPlan {
  system: readonly SystemEntry[];
  /** Files (bound over with an unreadable node) and directories (an empty tmpfs) the sandbox must not read. */
  hiddenFiles: readonly string[];
  hiddenDirs: readonly string[];
  /** A host file of mode 000 bound over each hidden file: unreadable inside (no capabilities), not merely empty. */
  unreadable: string;
  /** Host paths bound read-only at their own path (TD_SANDBOX_READ, an MCP server's `read`, the proxy's). */
  read: readonly { src: string; dest: string }[];
  /** Read-write at its own path, and the working directory. */
  workdir: string;
  net: SandboxNet['mode'];
  env: Record<string, string>;
  argv: readonly string[];
}

/**
 * bwrap's arguments for `plan`: new user (uid SANDBOX_UID), pid, net, ipc, uts and cgroup
 * namespaces; no capabilities; the system read-only, credentials hidden; a private /tmp, /dev
 * and /proc; the workdir read-write; the environment cleared to `plan.env`. Order matters: a
 * mount given later lands on top (the workdir inside the private /tmp, say).
 */
export function bwrapArgs(plan: BwrapPlan): string[] {
  const a: string[] = ['--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)];
  a.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (plan.net !== 'host') a.push('--unshare-net');
  a.push('--hostname', SANDBOX_HOSTNAME, '--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  for (const entry of plan.system) {
    if (entry.kind === 'symlink') a.push('--symlink', entry.target, entry.path);
    else a.push('--ro-bind', entry.path, entry.path);
  }
  for (const file of plan.hiddenFiles) a.push('--ro-bind', plan.unreadable, file);
  for (const dir of plan.hiddenDirs) a.push('--tmpfs', dir, '--remount-ro', dir);
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  for (const bind of plan.read) a.push('--ro-bind', bind.src, bind.dest);
  a.push('--bind', plan.workdir, plan.workdir, '--chdir', plan.workdir);
  a.push('--clearenv');
  for (const [key, value] of Object.entries(plan.env)) a.push('--setenv', key, value);
  a.push('--', ...plan.argv);
  return a;
}
