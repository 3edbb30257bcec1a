import { randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorCode, errorMessage } from '../support/node-error.js';
import type { SandboxLimits } from './sandbox.js';

const CGROUP_FS = '/sys/fs/cgroup';
/** The folder (under the worker's own cgroup) that holds one cgroup per sandboxed call. */
const PARENT = 'td-sandbox';
const MB = 1024 * 1024;
const EMPTY_POLL_MS = 2;

/** Where this machine lets the worker make cgroups: v1 memory + pids hierarchies, or one delegated v2 subtree. */
export type CgroupRoots = { version: 1; memory: string; pids: string } | { version: 2; dir: string };

/** The cgroup(s) of one sandbox: made with its limits, joined by its first process, removed after. */
export interface CallCgroup {
  /** The `cgroup.procs` files its first process writes its pid to (before it execs anything). */
  readonly procsFiles: readonly string[];
  /** Host pids of its processes now. */
  members(): Promise<number[]>;
  /** OOM kills so far (a memory limit crossed). */
  oomKills(): Promise<number>;
  /** Waits up to `ms` for it to hold no process; true when empty. */
  waitEmpty(ms: number): Promise<boolean>;
  remove(): Promise<void>;
}

/** The worker's own cgroup path in a hierarchy (`4:memory:/a/b`), or `/` when it has none there. */
function ownPath(procSelfCgroup: string, controller: string | ''): string {
  for (const line of procSelfCgroup.split('\n')) {
    const [, controllers, p] = line.split(':');
    if (controllers === undefined || p === undefined) continue;
    if (controller === '' ? controllers === '' && line.startsWith('0::') : controllers.split(',').includes(controller))
      return p;
  }
  return '/';
}

/** The worker's own cgroup dir of `hierarchy` if it shows in this mount namespace, else the mount's root. */
async function ownDir(mount: string, own: string): Promise<string> {
  const dir = path.join(mount, own);
  return (await exists(dir)) ? dir : mount;
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

/**
 * Finds writable cgroups for the limits: v1's memory and pids controllers (the worker's own
 * cgroup in each, then `td-sandbox/` under it), else a v2 tree whose memory and pids controllers
 * can be handed down. A string is the problem, with the fix.
 */
export async function findCgroupRoots(): Promise<CgroupRoots | string> {
  const self = await readFile('/proc/self/cgroup', 'utf8').catch(() => '');
  const problems: string[] = [];
  if ((await exists(`${CGROUP_FS}/memory/memory.limit_in_bytes`)) && (await exists(`${CGROUP_FS}/pids`))) {
    const memory = path.join(await ownDir(`${CGROUP_FS}/memory`, ownPath(self, 'memory')), PARENT);
    const pids = path.join(await ownDir(`${CGROUP_FS}/pids`, ownPath(self, 'pids')), PARENT);
    try {
      await mkdir(memory, { recursive: true });
      await mkdir(pids, { recursive: true });
      return { version: 1, memory, pids };
    } catch (e) {
      problems.push(`cgroup v1 memory/pids are not writable (${errorMessage(e)})`);
    }
  }
  if (await exists(`${CGROUP_FS}/cgroup.controllers`)) {
    const found = await v2Root(path.join(CGROUP_FS, ownPath(self, '')));
    if (typeof found !== 'string') return found;
    problems.push(found);
  }
  if (problems.length === 0) problems.push(`no cgroup hierarchy with memory and pids controllers under ${CGROUP_FS}`);
  return `${problems.join('; ')}: the sandbox's limits need one (run the worker as root with /sys/fs/cgroup writable, or in a container with a delegated cgroup v2 subtree)`;
}

/** A v2 subtree for sandboxes: `td-sandbox/` beside the worker's own cgroup's processes, controllers enabled. */
async function v2Root(own: string): Promise<CgroupRoots | string> {
  const dir = path.join(own, PARENT);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(own, 'cgroup.subtree_control'), '+memory +pids');
    await writeFile(path.join(dir, 'cgroup.subtree_control'), '+memory +pids');
    return { version: 2, dir };
  } catch (e) {
    return `cgroup v2 at ${own} cannot hand memory and pids down (${errorMessage(e)})`;
  }
}

/** Makes one sandbox's cgroup(s) with `limits` (memory without swap, pids). */
export async function createCallCgroup(roots: CgroupRoots, limits: SandboxLimits): Promise<CallCgroup> {
  const name = `c-${process.pid}-${randomBytes(6).toString('hex')}`;
  const bytes = String(limits.memoryMb * MB);
  if (roots.version === 1) {
    const memory = path.join(roots.memory, name);
    const pids = path.join(roots.pids, name);
    await mkdir(memory);
    await mkdir(pids);
    await writeFile(path.join(memory, 'memory.limit_in_bytes'), bytes);
    await writeFile(path.join(memory, 'memory.memsw.limit_in_bytes'), bytes).catch(() => undefined); // no swap accounting: fine
    await writeFile(path.join(pids, 'pids.max'), String(limits.pids));
    return callCgroup([memory, pids], path.join(memory, 'memory.oom_control'));
  }
  const dir = path.join(roots.dir, name);
  await mkdir(dir);
  await writeFile(path.join(dir, 'memory.max'), bytes);
  await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined);
  await writeFile(path.join(dir, 'pids.max'), String(limits.pids));
  return callCgroup([dir], path.join(dir, 'memory.events'));
}

function callCgroup(dirs: readonly string[], oomFile: string): CallCgroup {
  const procsFiles = dirs.map((d) => path.join(d, 'cgroup.procs'));
  const members = async () => {
    const lists = await Promise.all(procsFiles.map((f) => readFile(f, 'utf8').catch(() => '')));
    return [...new Set(lists.join('\n').split('\n').filter(Boolean).map(Number))];
  };
  const waitEmpty = async (ms: number) => {
    const deadline = Date.now() + ms;
    for (;;) {
      if ((await members()).length === 0) return true;
      if (Date.now() >= deadline) return false;
      await sleep(EMPTY_POLL_MS);
    }
  };
  return {
    procsFiles,
    members,
    waitEmpty,
    oomKills: async () => {
      const text = await readFile(oomFile, 'utf8').catch(() => '');
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    },
    remove: async () => {
      for (const dir of dirs) {
        // A cgroup goes once its last process is reaped; the kernel may take a moment after the kill.
        for (let i = 0; i < 100; i++) {
          try {
            await rmdir(dir);
            break;
          } catch (e) {
            if (errorCode(e) === 'ENOENT') break;
            await sleep(EMPTY_POLL_MS);
          }
        }
      }
    },
  };
}
