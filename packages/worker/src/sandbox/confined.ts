import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallCgroup } from './cgroup.js';
import type { Confined, KillingLimit } from './sandbox.js';

/** How often a running sandbox's OOM count is read: a crossing kills it whole within this. */
const OOM_POLL_MS = 50;
const GRACE_POLL_MS = 25;
/** How long the processes of a killed sandbox get to be gone before it counts as a bug. */
const GONE_MS = 5_000;

/** The parent pid of `pid` (from /proc), or undefined once it is gone. */
async function parentOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return undefined;
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Signals `pid`, which may have gone already. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/**
 * The handle on one bwrap sandbox: `child` is the outer bwrap (in the call's cgroup), its child
 * the pid namespace's init; when that init dies the kernel kills everything else inside, so a
 * SIGKILL to the outer bwrap (--die-with-parent) ends the whole tree, `setsid` children included.
 */
export function confinedOf(child: ChildProcess, cgroup: CallCgroup): Confined {
  const outer = child.pid;
  let settleLimit: (limit: KillingLimit) => void = () => {};
  const overLimit = new Promise<KillingLimit>((resolve) => {
    settleLimit = resolve;
  });
  const killAll = async () => {
    if (outer !== undefined) signal(outer, 'SIGKILL');
    for (const pid of await cgroup.members()) signal(pid, 'SIGKILL');
  };
  const watch = setInterval(() => {
    cgroup.oomKills().then(
      (n) => {
        if (n === 0) return;
        clearInterval(watch);
        killAll().catch(() => undefined);
        settleLimit('memory');
      },
      () => undefined,
    );
  }, OOM_POLL_MS);
  watch.unref();

  /** The command's own processes: the cgroup's but the outer bwrap and the namespace's init. */
  const commandPids = async () => {
    const members = await cgroup.members();
    const parents = await Promise.all(members.map(parentOf));
    return members.filter((pid, i) => pid !== outer && parents[i] !== outer && parents[i] !== undefined);
  };
  const kill = async (graceMs: number) => {
    const first = await commandPids();
    for (const pid of first) signal(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (first.length > 0 && Date.now() < deadline && (await commandPids()).length > 0) await sleep(GRACE_POLL_MS);
    await killAll();
    if (!(await cgroup.waitEmpty(GONE_MS))) await killAll();
  };
  const finish = async () => {
    clearInterval(watch);
    if (!(await cgroup.waitEmpty(GONE_MS))) {
      await killAll();
      await cgroup.waitEmpty(GONE_MS);
    }
    const ooms = await cgroup.oomKills();
    await cgroup.remove();
    return ooms > 0 ? { limit: 'memory' as const } : {};
  };
  return { child, overLimit, kill, finish };
}
