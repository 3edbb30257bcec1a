import { access, chmod, constants, lstat, mkdtemp, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SandboxConfig } from '@tool-dispatch/shared';
import { proxiedLaunch, type SandboxProxy, startSandboxProxy } from '../net/sandbox-proxy.js';
import { errorMessage } from '../support/node-error.js';
import { BwrapSandbox, type NetLauncher } from './bwrap.js';
import { SYSTEM_DIRS, type SystemEntry } from './bwrap-args.js';
import { findCgroupRoots } from './cgroup.js';
import { OffSandbox, UnavailableSandbox } from './off.js';
import type { Sandbox, SandboxLimits } from './sandbox.js';

/** Credentials hidden whatever their mode (API.md v1.3 "Files"). */
const CREDENTIALS = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/ssl/private',
  '/etc/sudoers',
  '/etc/sudoers.d',
];
/** Where the sandbox's uid (mapped to the worker's) would read what only its owner may: all hidden. */
const SCANNED_FOR_PRIVATE = ['/etc'];
const MAX_SCANNED = 20_000;
const PROBE_TIMEOUT_MS = 15_000;
const FIX =
  'install bubblewrap (scripts/setup.sh does: apt-get install bubblewrap) and run the worker where it may make namespaces and cgroups, or set TD_SANDBOX=off where the worker is itself the sandbox (one container or VM per session)';

export interface CreateSandboxOptions {
  /** Host files of the worker's that must not show inside even under a system dir (TD_API_TOKENS…). */
  hide?: readonly string[];
  /** Allow lists of TD_SANDBOX_NET (or an MCP server's `net`): the filtering proxy's launch. */
  netLauncher?: NetLauncher;
  onClose?: () => Promise<void>;
  bwrap?: string;
  /** TD_HTTP_ALLOW for the allow-list proxy's address check (default: this process's). */
  httpAllow?: readonly string[];
}

function httpAllowOf(env: NodeJS.ProcessEnv): string[] {
  return (env.TD_HTTP_ALLOW ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

/**
 * One filtering proxy (net/sandbox-proxy.ts) per allow list, started when a sandbox first needs
 * it (TD_SANDBOX_NET's, or an MCP server's `net`) and closed with the sandbox.
 */
class ProxyPool {
  private readonly proxies = new Map<string, Promise<SandboxProxy>>();
  constructor(private readonly httpAllow: readonly string[]) {}

  async launch(patterns: readonly string[], argv: readonly string[]) {
    const key = patterns.join(',');
    let proxy = this.proxies.get(key);
    if (!proxy) {
      proxy = startSandboxProxy({ allow: patterns, httpAllow: this.httpAllow });
      this.proxies.set(key, proxy);
      proxy.catch(() => this.proxies.delete(key));
    }
    return proxiedLaunch(await proxy, argv);
  }

  async close(): Promise<void> {
    const all = [...this.proxies.values()];
    this.proxies.clear();
    await Promise.all(
      all.map((p) =>
        p.then(
          (x) => x.close(),
          () => undefined,
        ),
      ),
    );
  }
}

/**
 * The sandbox of TD_SANDBOX (API.md v1.3), probed once: `off` as before v1.3; `on` when a real
 * sandboxed `true` ran (bwrap, namespaces, cgroups); else `unavailable` naming the cause and the fix.
 */
export async function createSandbox(config: SandboxConfig, options: CreateSandboxOptions = {}): Promise<Sandbox> {
  const limits: SandboxLimits = { memoryMb: config.memoryMb, pids: config.pids, fileMb: config.fileMb };
  if (config.mode === 'off') return new OffSandbox(limits);
  const unavailable = (why: string) =>
    new UnavailableSandbox(`no sandbox for commands on this worker: ${why}; fix: ${FIX}`, limits);
  const bwrap = options.bwrap ?? (await firstExecutable(['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']));
  if (!bwrap) return unavailable('bwrap (bubblewrap) is not installed');
  const prlimit = await firstExecutable(['/usr/bin/prlimit', '/bin/prlimit']);
  if (!prlimit) return unavailable('prlimit (util-linux) is not installed, and TD_SANDBOX_FILE_MB needs it');
  const roots = await findCgroupRoots();
  if (typeof roots === 'string') return unavailable(roots);
  const [system, hidden, unreadable] = await Promise.all([
    systemEntries(),
    hiddenPaths(options.hide ?? []),
    unreadableFile(),
  ]);
  const proxies = options.netLauncher ? undefined : new ProxyPool(options.httpAllow ?? httpAllowOf(process.env));
  const sandbox = new BwrapSandbox({
    bwrap,
    prlimit,
    roots,
    limits,
    system,
    ...hidden,
    unreadable: unreadable.file,
    read: config.read,
    net: config.net,
    netLauncher: options.netLauncher ?? ((net, argv) => (proxies as ProxyPool).launch(net.patterns, argv)),
    onClose: async () => {
      await proxies?.close();
      await rm(unreadable.dir, { recursive: true, force: true });
      await options.onClose?.();
    },
  });
  const problem = await probe(sandbox);
  return problem ? unavailable(problem) : sandbox;
}

/**
 * An empty host file of mode 000, bound over the credentials: the sandbox's uid maps to the
 * worker's, which owns them, so a readable stand-in (or the file itself) would be readable; with
 * no capabilities inside, mode 000 is not (`cat` fails, `test -r` is false) and a read-only bind
 * cannot be chmod'ed.
 */
async function unreadableFile(): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-sandbox-'));
  const file = path.join(dir, 'unreadable');
  await writeFile(file, '');
  await chmod(file, 0o000);
  return { dir, file };
}

async function firstExecutable(candidates: readonly string[]): Promise<string | undefined> {
  for (const c of candidates) {
    if (
      await access(c, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return c;
  }
  return undefined;
}

/** The system directories as this host has them (merged /usr: /bin a symlink). */
export async function systemEntries(): Promise<SystemEntry[]> {
  const entries: SystemEntry[] = [];
  for (const p of SYSTEM_DIRS) {
    const st = await lstat(p).catch(() => undefined);
    if (!st) continue;
    if (st.isSymbolicLink()) entries.push({ path: p, kind: 'symlink', target: await readlink(p) });
    else if (st.isDirectory()) entries.push({ path: p, kind: 'dir' });
  }
  return entries;
}

/**
 * What to hide under the system directories: the credentials, every file or directory of /etc
 * that others may not read (the sandbox's uid maps to the worker's, so it would own them), and
 * the worker's own files named in `hide` with their directory when that is not a system root.
 */
export async function hiddenPaths(hide: readonly string[]): Promise<{ hiddenFiles: string[]; hiddenDirs: string[] }> {
  const files = new Set<string>();
  const dirs = new Set<string>();
  const add = async (p: string) => {
    const st = await lstat(p).catch(() => undefined);
    if (!st || st.isSymbolicLink()) return;
    if (st.isDirectory()) dirs.add(p);
    else files.add(p);
  };
  for (const p of CREDENTIALS) await add(p);
  for (const root of SCANNED_FOR_PRIVATE) await scanPrivate(root, add);
  const roots = new Set<string>(SYSTEM_DIRS);
  for (const p of hide) {
    const abs = path.resolve(p);
    if (!SYSTEM_DIRS.some((d) => abs.startsWith(`${d}/`))) continue; // not bound into the sandbox at all
    const dir = path.dirname(abs);
    await add(roots.has(dir) ? abs : dir);
  }
  // A hidden directory already covers what is under it.
  const covered = (p: string) => [...dirs].some((d) => d !== p && p.startsWith(`${d}/`));
  return { hiddenFiles: [...files].filter((f) => !covered(f)), hiddenDirs: [...dirs].filter((d) => !covered(d)) };
}

async function scanPrivate(root: string, add: (p: string) => Promise<void>): Promise<void> {
  const queue = [root];
  let seen = 0;
  while (queue.length > 0 && seen < MAX_SCANNED) {
    const dir = queue.shift() as string;
    const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of names) {
      seen++;
      const p = path.join(dir, d.name);
      if (d.isSymbolicLink()) continue;
      const st = await lstat(p).catch(() => undefined);
      if (!st) continue;
      const othersMay = d.isDirectory() ? (st.mode & 0o005) === 0o005 : (st.mode & 0o004) !== 0;
      if (!othersMay) await add(p);
      else if (d.isDirectory()) queue.push(p);
    }
  }
}

/** Runs one real sandboxed command: an unprivileged uid, no /etc/shadow; a string is what went wrong. */
async function probe(sandbox: Sandbox): Promise<string | undefined> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-sandbox-probe-'));
  try {
    const c = await sandbox.launch({
      argv: ['/bin/sh', '-c', 'test "$(id -u)" != 0 && ! cat /etc/shadow 2>/dev/null'],
      workdir: dir,
    });
    let stderr = '';
    c.child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-500);
    });
    c.child.stdout?.resume();
    const timer = setTimeout(() => c.kill(0).catch(() => undefined), PROBE_TIMEOUT_MS);
    const code = await new Promise<number | null>((resolve) => {
      c.child.once('exit', (n) => resolve(n));
      c.child.once('error', () => resolve(null));
    });
    clearTimeout(timer);
    await c.finish();
    if (code === 0) return undefined;
    return `a sandboxed probe command failed (exit ${code})${stderr.trim() ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`;
  } catch (e) {
    return `a sandbox could not be started: ${errorMessage(e)}`;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
