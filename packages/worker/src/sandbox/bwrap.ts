import { spawn } from 'node:child_process';
import type { SandboxNet } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { type BwrapPlan, bwrapArgs, SANDBOX_HOME, type SystemEntry } from './bwrap-args.js';
import { type CallCgroup, type CgroupRoots, createCallCgroup } from './cgroup.js';
import { confinedOf, signal } from './confined.js';
import {
  type Confined,
  DEFAULT_PATH,
  type LaunchSpec,
  type PreparedLaunch,
  type Sandbox,
  type SandboxLimits,
  sandboxEnv,
} from './sandbox.js';

/** Joins the call's cgroups, then execs the rest: nothing of the command runs before it is limited. */
const JOIN_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
const MB = 1024 * 1024;
/** A sandbox built without a proxy launcher (create.ts always gives one): allow lists fail closed. */
export const NET_MISSING =
  'TD_SANDBOX_NET allow lists (and an MCP server\'s "net") need the filtering HTTP(S) proxy of the worker (net/sandbox-proxy.ts), which this build has not got: nothing is run; use none or host';

/** What an allow-list network needs at launch: the proxy's binds, a wrapped argv and its variables. */
export type NetLauncher = (
  net: Extract<SandboxNet, { mode: 'allow' }>,
  argv: readonly string[],
) => Promise<{ argv: string[]; env: Record<string, string>; roBinds: { src: string; dest: string }[] }>;

export interface BwrapSandboxOptions {
  bwrap: string;
  prlimit: string;
  roots: CgroupRoots;
  limits: SandboxLimits;
  system: readonly SystemEntry[];
  hiddenFiles: readonly string[];
  hiddenDirs: readonly string[];
  /** A mode-000 host file bound over the hidden files. */
  unreadable: string;
  /** TD_SANDBOX_READ. */
  read: readonly string[];
  net: SandboxNet;
  /** Absent: allow lists cannot be served (the launch fails `sandbox_unavailable`). */
  netLauncher?: NetLauncher;
  netMissing?: string;
  onClose?: () => Promise<void>;
}

/** The bwrap back end: a new set of namespaces and a cgroup per launch (see bwrap-args.ts). */
export class BwrapSandbox implements Sandbox {
  readonly mode = 'on' as const;
  readonly limits: SandboxLimits;

  constructor(private readonly options: BwrapSandboxOptions) {
    this.limits = options.limits;
  }

  async launch(spec: LaunchSpec): Promise<Confined> {
    const { command, args, cgroup } = await this.plan(spec);
    const child = spawn(command, args, {
      detached: true,
      stdio: [spec.stdin ?? 'ignore', 'pipe', 'pipe'],
      env: { PATH: DEFAULT_PATH },
    });
    return confinedOf(child, cgroup);
  }

  async prepare(spec: LaunchSpec & { env?: Record<string, string> }): Promise<PreparedLaunch> {
    const { command, args, cgroup } = await this.plan(spec);
    const release = async () => {
      for (const pid of await cgroup.members()) signal(pid, 'SIGKILL');
      await cgroup.waitEmpty(5_000);
      await cgroup.remove();
    };
    return { command, args, env: { PATH: DEFAULT_PATH }, release };
  }

  /** The cgroup made, and the argv that joins it, sets the file limit and starts bwrap. */
  private async plan(
    spec: LaunchSpec & { env?: Record<string, string> },
  ): Promise<{ command: string; args: string[]; cgroup: CallCgroup }> {
    const o = this.options;
    const net = spec.net ?? o.net;
    let argv = [...spec.argv];
    let netEnv: Record<string, string> = {};
    const read = [...o.read, ...(spec.read ?? [])].map((p) => ({ src: p, dest: p }));
    if (net.mode === 'allow') {
      if (!o.netLauncher) throw new ToolError('sandbox_unavailable', o.netMissing ?? NET_MISSING);
      const launch = await o.netLauncher(net, argv);
      argv = launch.argv;
      netEnv = launch.env;
      read.push(...launch.roBinds);
    }
    const own = { HOME: SANDBOX_HOME, TMPDIR: '/tmp', USER: 'sandbox', LOGNAME: 'sandbox' };
    const plan: BwrapPlan = {
      system: o.system,
      hiddenFiles: o.hiddenFiles,
      hiddenDirs: o.hiddenDirs,
      unreadable: o.unreadable,
      read,
      workdir: spec.workdir,
      net: net.mode,
      env: sandboxEnv({ ...own, ...(spec.env ?? {}), ...netEnv }),
      argv,
    };
    const cgroup = await createCallCgroup(o.roots, o.limits);
    const fsize = String(o.limits.fileMb * MB);
    const args = ['-c', JOIN_CGROUPS, 'sh', ...cgroup.procsFiles, '--', o.prlimit, `--fsize=${fsize}`, '--core=0'];
    args.push('--', o.bwrap, ...bwrapArgs(plan));
    return { command: '/bin/sh', args, cgroup };
  }

  async close(): Promise<void> {
    await this.options.onClose?.();
  }
}
