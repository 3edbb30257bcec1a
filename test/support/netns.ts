import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './net.js';
import { waitForPing } from './redis.js';

// Network partitions for real (issue #43): processes in Linux network namespaces of their own, each
// joined to the host by a veth pair on a private /30, a redis-server on the host side bound to the
// host ends, and links cut and healed with iptables inside a namespace. Needs root (ip, iptables).
// Everything made is written down in a state file first, so a run that crashed is cleaned up by
// the next one (`sweepLeftovers`), and removed on every exit path of this one (close, exit, signals).

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = path.join(root, 'bin', 'tool-dispatch');
const STATE_DIR = path.join(tmpdir(), 'td-netns-state');
/** The /30s are carved from 10.213.0.0/16 (16 384 of them). */
const SUBNETS = 16_384;

export interface Namespace {
  /** `td-<pid>-<n>`: unique per test process. */
  readonly name: string;
  /** The veth end on the host, and its address (Redis listens there). */
  readonly hostIf: string;
  readonly hostAddr: string;
  /** The namespace's own address (its processes' HTTP is reachable there from the host). */
  readonly nsAddr: string;
}

export interface NsProc {
  readonly ns: Namespace;
  readonly child: ChildProcess;
  readonly output: string[];
  /** The port it was told (`--port`), on the namespace's address. */
  readonly port: number;
  /** `http://<ns address>:<port>`. */
  readonly url: string;
}

/** How a link is cut: both directions, or only what the namespace sends (an asymmetric partition). */
export type CutMode = 'both' | 'outbound';

interface State {
  owner: number;
  namespaces: { name: string; hostIf: string }[];
  /** Processes started, with their start time (field 22 of /proc/<pid>/stat), so a reused pid is never killed. */
  pids: { pid: number; started: string }[];
}

/** Whether this machine can run the partition tests: root, and `ip` and `iptables` present. */
export function partitionSupport(): { ok: true } | { ok: false; why: string } {
  if (process.getuid?.() !== 0) return { ok: false, why: 'network namespaces need root' };
  for (const [tool, flag] of [
    ['ip', '-V'],
    ['iptables', '--version'],
  ] as const) {
    try {
      execFileSync(tool, [flag], { stdio: 'ignore' });
    } catch {
      return { ok: false, why: `${tool} is not installed (apt-get install iproute2 iptables)` };
    }
  }
  return { ok: true };
}

/**
 * A set of network namespaces joined to one redis-server on the host. `Partitions.create(n)`
 * makes n namespaces then starts Redis bound to loopback and every host end.
 */
export class Partitions {
  readonly namespaces: Namespace[] = [];
  private readonly procs: NsProc[] = [];
  private readonly state: State = { owner: process.pid, namespaces: [], pids: [] };
  private redisChild: ChildProcess | undefined;
  private redisDir: string | undefined;
  redisPort = 0;
  private closed = false;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.closeSync();
    process.kill(process.pid, signal);
  };
  private readonly onExit = () => this.closeSync();

  private constructor(private readonly serial: number) {}

  static async create(count: number): Promise<Partitions> {
    sweepLeftovers();
    const p = new Partitions(nextSerial++);
    process.once('exit', p.onExit);
    process.once('SIGINT', p.onSignal);
    process.once('SIGTERM', p.onSignal);
    try {
      for (let i = 0; i < count; i++) p.namespaces.push(await p.addNamespace(i));
      await p.startRedis();
    } catch (e) {
      await p.close();
      throw e;
    }
    return p;
  }

  /** The Redis URL a namespace's processes use: the host end of its own veth. */
  redisUrlFor(ns: Namespace): string {
    return `redis://${ns.hostAddr}:${this.redisPort}`;
  }

  /** The Redis URL for the test itself (loopback). */
  get redisUrl(): string {
    return `redis://127.0.0.1:${this.redisPort}`;
  }

  /**
   * Starts `bin/tool-dispatch <args> --port <free>` inside `ns`, its own process group, REDIS_URL
   * pointing at the host end; resolves once its output matches `waitFor`. `nsenter --net`, not
   * `ip netns exec`: that one also remounts /sys for the namespace, which hides /sys/fs/cgroup
   * from the worker's sandbox (every run_command would end sandbox_unavailable).
   */
  async start(ns: Namespace, args: string[], env: Record<string, string>, waitFor: RegExp): Promise<NsProc> {
    const port = await freePort();
    const child = spawn('nsenter', [`--net=/run/netns/${ns.name}`, bin, ...args, '--port', String(port)], {
      cwd: root,
      env: { ...process.env, REDIS_URL: this.redisUrlFor(ns), ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc: NsProc = { ns, child, output: [], port, url: `http://${ns.nsAddr}:${port}` };
    this.procs.push(proc);
    this.remember(child.pid);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${args[0]} in ${ns.name} did not start:\n${text(proc)}`)),
        90_000,
      );
      const onData = (d: Buffer) => {
        proc.output.push(d.toString());
        if (proc.output.length > 2000) proc.output.splice(0, 1000);
        if (waitFor.test(text(proc))) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${args[0]} in ${ns.name} exited (${code}):\n${text(proc)}`));
      });
    });
    return proc;
  }

  /** `tool-dispatch coordinator` in `ns`, listening on the namespace's address; resolves once /readyz is 200. */
  async startCoordinator(ns: Namespace, env: Record<string, string>): Promise<NsProc> {
    const c = await this.start(ns, ['coordinator', '--host', ns.nsAddr], env, /listening on/);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const status = await fetch(`${c.url}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return c;
      if (Date.now() > deadline) throw new Error(`coordinator in ${ns.name} not ready:\n${text(c)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Cuts the namespace off from the host (Redis, the test, every other namespace): iptables DROP
   * inside it of what it sends to the host end, and with `both` of what it receives from it.
   */
  async cut(ns: Namespace, mode: CutMode = 'both'): Promise<void> {
    await nsRun(ns, 'iptables', ['-w', '-A', 'OUTPUT', '-d', ns.hostAddr, '-j', 'DROP']);
    if (mode === 'both') await nsRun(ns, 'iptables', ['-w', '-A', 'INPUT', '-s', ns.hostAddr, '-j', 'DROP']);
  }

  /** Heals every cut of the namespace (its INPUT and OUTPUT chains are ours alone: flushed). */
  async heal(ns: Namespace): Promise<void> {
    await nsRun(ns, 'iptables', ['-w', '-F', 'INPUT']);
    await nsRun(ns, 'iptables', ['-w', '-F', 'OUTPUT']);
  }

  /** The rules inside a namespace (`iptables -S`), for tests of the harness. */
  async rules(ns: Namespace): Promise<string> {
    return (await run('ip', ['netns', 'exec', ns.name, 'iptables', '-w', '-S'])).stdout;
  }

  /** SIGKILLs a process started here (its group) and waits for its exit. */
  async kill(proc: NsProc): Promise<void> {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    const exited = new Promise((r) => proc.child.once('exit', r));
    killGroup(proc.child.pid);
    await exited;
  }

  /** Everything made removed: processes, Redis, namespaces (their veth and rules go with them). */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all(this.procs.map((p) => this.kill(p)));
    if (this.redisChild && this.redisChild.exitCode === null) {
      const exited = new Promise((r) => this.redisChild?.once('exit', r));
      this.redisChild.kill('SIGKILL');
      await exited;
    }
    if (this.redisDir) await rm(this.redisDir, { recursive: true, force: true });
    this.closeSync();
  }

  /** The synchronous part of close, also run on exit and signals. */
  private closeSync(): void {
    if (this.closed) return;
    this.closed = true;
    process.off('exit', this.onExit);
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    removeState(this.state);
    rmSync(this.statePath(), { force: true });
  }

  private statePath(): string {
    return path.join(STATE_DIR, `${process.pid}-${this.serial}.json`);
  }

  private save(): void {
    mkdirSync(STATE_DIR, { recursive: true });
    writeFileSync(this.statePath(), JSON.stringify(this.state));
  }

  private remember(pid: number | undefined): void {
    if (pid === undefined) return;
    this.state.pids.push({ pid, started: startTimeOf(pid) ?? '' });
    this.save();
  }

  private async addNamespace(i: number): Promise<Namespace> {
    const id = `${process.pid}x${this.serial}${i}`;
    const name = `td-${process.pid}-${this.serial}${i}`;
    const hostIf = `tdh${id}`.slice(0, 15);
    const nsIf = `tdn${id}`.slice(0, 15);
    const [hostAddr, nsAddr] = await freeSubnet(process.pid * 64 + this.serial * 8 + i);
    // Written down before it exists: a crash in between still leaves a record to sweep.
    this.state.namespaces.push({ name, hostIf });
    this.save();
    await run('ip', ['netns', 'add', name]);
    await run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    await run('ip', ['link', 'set', nsIf, 'netns', name]);
    await run('ip', ['addr', 'add', `${hostAddr}/30`, 'dev', hostIf]);
    await run('ip', ['link', 'set', hostIf, 'up']);
    const ns: Namespace = { name, hostIf, hostAddr, nsAddr };
    await nsRun(ns, 'ip', ['addr', 'add', `${nsAddr}/30`, 'dev', nsIf]);
    await nsRun(ns, 'ip', ['link', 'set', nsIf, 'up']);
    await nsRun(ns, 'ip', ['link', 'set', 'lo', 'up']);
    return ns;
  }

  private async startRedis(): Promise<void> {
    this.redisDir = await mkdtemp(path.join(tmpdir(), 'td-netns-redis-'));
    const binds = ['127.0.0.1', ...this.namespaces.map((n) => n.hostAddr)];
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort();
      // Bound only to loopback and the host ends of our veths, so protected mode (loopback only) is off.
      const args = [
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        '--port',
        String(port),
        '--dir',
        this.redisDir,
      ];
      const child = spawn('redis-server', [...args, '--bind', ...binds], { stdio: 'ignore' });
      this.remember(child.pid);
      const exited = new Promise<never>((_, reject) => child.once('exit', (c) => reject(new Error(`exit ${c}`))));
      exited.catch(() => undefined);
      try {
        await Promise.race([waitForPing(`redis://127.0.0.1:${port}`, 10_000), exited]);
        this.redisChild = child;
        this.redisPort = port;
        return;
      } catch {
        child.kill('SIGKILL');
      }
    }
    throw new Error('redis-server did not start on the host ends');
  }
}

let nextSerial = 0;

const text = (p: NsProc): string => p.output.join('');

function nsRun(ns: Namespace, file: string, args: string[]) {
  return run('ip', ['netns', 'exec', ns.name, file, ...args]);
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/** A free /30 of 10.213.0.0/16 (no host address in it yet), from a starting index: [host end, namespace end]. */
async function freeSubnet(from: number): Promise<[string, string]> {
  const used = (await run('ip', ['-4', '-o', 'addr', 'show'])).stdout;
  for (let k = 0; k < SUBNETS; k++) {
    const index = (from + k) % SUBNETS;
    const base = index * 4;
    const prefix = `10.213.${Math.floor(base / 256)}.`;
    const host = `${prefix}${(base % 256) + 1}`;
    if (!used.includes(` ${host}/`)) return [host, `${prefix}${(base % 256) + 2}`];
  }
  throw new Error('no free /30 left in 10.213.0.0/16');
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Removes what a state file names: its processes (if still the same ones), namespaces and host ends. */
function removeState(state: State): void {
  for (const { pid, started } of state.pids) if (startTimeOf(pid) === started) killGroup(pid);
  for (const { name, hostIf } of state.namespaces) {
    execFileSafe('ip', ['netns', 'del', name]);
    execFileSafe('ip', ['link', 'del', hostIf]);
  }
}

function execFileSafe(file: string, args: string[]): void {
  try {
    execFileSync(file, args, { stdio: 'ignore' });
  } catch {
    /* already gone */
  }
}

/**
 * What a crashed run left: state files of processes that are gone, and namespaces named
 * `td-<pid>-…` whose pid is gone (made before their state file was written).
 */
export function sweepLeftovers(): void {
  let files: string[] = [];
  try {
    files = readdirSync(STATE_DIR);
  } catch {
    /* none yet */
  }
  for (const file of files) {
    const owner = Number(file.split('-')[0]);
    if (!Number.isInteger(owner) || alive(owner)) continue;
    try {
      removeState(JSON.parse(readFileSync(path.join(STATE_DIR, file), 'utf8')) as State);
    } catch {
      /* unreadable: removed below */
    }
    rmSync(path.join(STATE_DIR, file), { force: true });
  }
  let names = '';
  try {
    names = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  } catch {
    return;
  }
  for (const line of names.split('\n')) {
    const m = /^td-(\d+)-\d+/.exec(line);
    if (m && !alive(Number(m[1]))) execFileSafe('ip', ['netns', 'del', line.split(' ')[0] as string]);
  }
  // A host end can outlive its namespace for a moment: removed by name (tdh<pid>x…).
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  for (const m of links.matchAll(/^\d+: (tdh(\d+)x\w*)[@:]/gm)) {
    if (!alive(Number(m[2]))) execFileSafe('ip', ['link', 'del', m[1] as string]);
  }
}
