import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomPrefix } from '../support/redis.js';
import type { TargetServer } from './target-server.js';

/** The two ways the service runs; one conformance suite covers both. */
/** embedded: `dev`; distributed: a coordinator and workers on one Redis; cluster: the same on a 3-primary Redis Cluster. */
export type Mode = 'embedded' | 'distributed' | 'cluster';
export const MODES: readonly Mode[] = ['embedded', 'distributed', 'cluster'];
/** TD_QUEUE_SHARDS in cluster mode (distributed mode keeps the default, 1). */
export const CLUSTER_QUEUE_SHARDS = 3;

/** Whether the mode runs coordinator and worker processes over Redis (one node, or a cluster). */
export const overRedis = (mode: Mode): boolean => mode !== 'embedded';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(REPO_ROOT, 'bin', 'tool-dispatch');
const START_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 8_000;

/** A process started in a group of its own, with what it printed. */
export interface ProcessGroup {
  label: string;
  pid: number;
  lines: string[];
  /** Settles when the leader exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly hasExited: boolean;
  /** Signals the whole group; false when it is already gone. */
  signal(signal: NodeJS.Signals): boolean;
  /** Resolves with the match once a printed line matches; rejects on exit or after `ms`. */
  waitLine(re: RegExp, ms: number): Promise<RegExpMatchArray>;
}

export interface ServiceOptions {
  mode: Mode;
  /** The tools' target: TD_HTTP_ALLOW names it and TD_SEARCH_URL is its fake SearxNG. */
  target: TargetServer;
  /** Distributed mode's Redis. */
  redisUrl?: string;
  /** Cluster mode's seed nodes (REDIS_CLUSTER_NODES). */
  clusterNodes?: string;
  /** Environment on top of the defaults; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Worker processes in distributed mode (default 2). */
  workers?: number;
}

/** A running service: `bin/tool-dispatch dev`, or a coordinator plus worker processes. */
export interface Service {
  mode: Mode;
  base: string;
  /** TD_WORKSPACE_ROOT (realpath'd). */
  root: string;
  /** TD_PREFIX (distributed mode). */
  prefix: string | undefined;
  coordinator: ProcessGroup;
  workers: ProcessGroup[];
  env: Record<string, string>;
  /** The workspace API.md promises: TD_WORKSPACE_ROOT/<tenant or default>/<session>. */
  workspace(session: string, tenant?: string): string;
  /** The last lines every process printed, for failure messages. */
  logTail(n?: number): string;
  /** SIGTERM to every group, SIGKILL after a grace period; removes the temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts the real processes from bin/tool-dispatch, each in its own process group, on free
 * ports, over a fresh temp TD_WORKSPACE_ROOT; resolves once the coordinator printed
 * `listening on` and /readyz answers 200 (in distributed mode: every worker consuming too).
 */
export async function startService(options: ServiceOptions): Promise<Service> {
  assertBuilt();
  const tmp = await realpath(await mkdtemp(path.join(tmpdir(), `td-conf-${options.mode}-`)));
  const root = path.join(tmp, 'workspaces');
  await mkdir(root, { recursive: true });
  const logFile = path.join(tmp, 'service.log');
  const env = serviceEnv(options, root);
  const groups: ProcessGroup[] = [];
  const stop = async () => {
    await Promise.all(groups.map((g) => stopGroup(g)));
    await rm(tmp, { recursive: true, force: true });
  };
  try {
    // Port 0: the process binds a free port itself and names it on its `listening on` line (a port
    // picked here first may be taken by another suite's process before this one binds it).
    const port = 0;
    let coordinator: ProcessGroup;
    const workers: ProcessGroup[] = [];
    if (options.mode === 'embedded') {
      coordinator = spawnGroup('dev', ['dev', '--port', String(port)], { ...env, PORT: String(port) }, logFile);
      groups.push(coordinator);
    } else {
      coordinator = spawnGroup(
        'coordinator',
        ['coordinator', '--port', String(port), '--host', '127.0.0.1'],
        env,
        logFile,
      );
      groups.push(coordinator);
      for (let i = 1; i <= (options.workers ?? 2); i++) {
        const w = spawnGroup(`worker-${i}`, ['worker'], { ...env, PORT: '0' }, logFile);
        groups.push(w);
        workers.push(w);
      }
    }
    const announced = await coordinator.waitLine(/listening on (http:\/\/\S+)/, START_TIMEOUT_MS);
    await Promise.all(workers.map((w) => w.waitLine(/consuming/, START_TIMEOUT_MS)));
    const base = `http://127.0.0.1:${new URL(announced[1] ?? '').port}`;
    await waitReady(base, env.TD_API_TOKEN, coordinator);
    const service: Service = {
      mode: options.mode,
      base,
      root,
      prefix: env.TD_PREFIX,
      coordinator,
      workers,
      env,
      workspace: (session, tenant) => path.join(root, tenant ?? 'default', session),
      logTail: (n = 30) =>
        groups.flatMap((g) => g.lines.slice(-n).map((l) => `[${g.label}] ${l}`)).join('\n') || '(no output)',
      stop,
    };
    return service;
  } catch (e) {
    const tail = groups.flatMap((g) => g.lines.slice(-20).map((l) => `[${g.label}] ${l}`)).join('\n');
    await stop();
    throw new Error(`${options.mode} service did not start: ${(e as Error).message}\n${tail}`);
  }
}

/** The service's environment: the defaults the contract names, nothing inherited that changes behaviour. */
function serviceEnv(options: ServiceOptions, root: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (k.startsWith('TD_') || k.startsWith('OTEL_') || /^(https?|all|no)_proxy$/i.test(k)) continue;
    if (
      k === 'REDIS_URL' ||
      k === 'REDIS_CLUSTER_NODES' ||
      k === 'PORT' ||
      k === 'MAX_CONCURRENT_TOOLS' ||
      k === 'NODE_OPTIONS'
    )
      continue;
    env[k] = v;
  }
  env.TD_WORKSPACE_ROOT = root;
  env.TD_HTTP_ALLOW = `127.0.0.1:${options.target.port}`;
  env.TD_SEARCH_URL = `http://127.0.0.1:${options.target.port}/searx`;
  if (options.mode === 'distributed') {
    if (!options.redisUrl) throw new Error('distributed mode needs a redisUrl');
    env.REDIS_URL = options.redisUrl;
    env.TD_PREFIX = randomPrefix('tdconf');
  }
  if (options.mode === 'cluster') {
    if (!options.clusterNodes) throw new Error('cluster mode needs clusterNodes');
    env.REDIS_CLUSTER_NODES = options.clusterNodes;
    env.TD_PREFIX = randomPrefix('tdconf');
    // The whole suite on sharded queues: each shard on its own primary (DESIGN.md "Beyond one Redis").
    env.TD_QUEUE_SHARDS = String(CLUSTER_QUEUE_SHARDS);
  }
  // TD_CONFORMANCE_JOB_CALLS: the suite with another TD_JOB_CALLS (1: batching off), as issue 31 asks.
  const jobCalls = process.env.TD_CONFORMANCE_JOB_CALLS;
  if (jobCalls && options.mode !== 'embedded') env.TD_JOB_CALLS = jobCalls;
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

function spawnGroup(label: string, args: string[], env: Record<string, string>, logFile: string): ProcessGroup {
  const child: ChildProcess = spawn(BIN, args, {
    cwd: REPO_ROOT,
    env,
    detached: true, // its own process group, killed as one
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile, { flags: 'a' });
  const lines: string[] = [];
  const watchers = new Set<(line: string | null) => void>();
  let hasExited = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      hasExited = true;
      log.end(`[${label}] exited code=${code} signal=${signal}\n`);
      for (const w of watchers) w(null);
      resolve({ code, signal });
    });
    child.once('error', (e) => {
      hasExited = true;
      lines.push(`spawn error: ${e.message}`);
      for (const w of watchers) w(null);
      resolve({ code: null, signal: null });
    });
  });
  for (const stream of [child.stdout, child.stderr]) {
    let buf = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (d: string) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        if (lines.length > 500) lines.shift();
        log.write(`[${label}] ${line}\n`);
        for (const w of watchers) w(line);
      }
    });
  }
  const pid = child.pid ?? -1;
  return {
    label,
    pid,
    lines,
    exited,
    get hasExited() {
      return hasExited;
    },
    signal(sig) {
      if (pid <= 0) return false;
      try {
        process.kill(-pid, sig);
        return true;
      } catch {
        return false;
      }
    },
    waitLine(re, ms) {
      return new Promise((resolve, reject) => {
        for (const l of lines) {
          const m = l.match(re);
          if (m) return resolve(m);
        }
        const stopWatching = () => {
          clearTimeout(timer);
          watchers.delete(watch);
        };
        const timer = setTimeout(() => {
          stopWatching();
          reject(new Error(`${label}: no line matching ${re} within ${ms} ms`));
        }, ms);
        const watch = (line: string | null) => {
          if (line === null) {
            stopWatching();
            reject(new Error(`${label} exited before printing ${re}`));
            return;
          }
          const m = line.match(re);
          if (m) {
            stopWatching();
            resolve(m);
          }
        };
        watchers.add(watch);
      });
    },
  };
}

/** One more coordinator process of a distributed service (same Redis, prefix, workspaces and log), on a free port. */
export async function startExtraCoordinator(
  service: Service,
  label = 'coordinator-2',
): Promise<{ base: string; group: ProcessGroup }> {
  if (!overRedis(service.mode)) throw new Error('a second coordinator needs distributed or cluster mode');
  const logFile = path.join(path.dirname(service.root), 'service.log');
  const group = spawnGroup(label, ['coordinator', '--port', '0', '--host', '127.0.0.1'], service.env, logFile);
  try {
    const announced = await group.waitLine(/listening on (http:\/\/\S+)/, START_TIMEOUT_MS);
    const base = `http://127.0.0.1:${new URL(announced[1] ?? '').port}`;
    await waitReady(base, service.env.TD_API_TOKEN, group);
    return { base, group };
  } catch (e) {
    await stopGroup(group);
    throw e;
  }
}

/** One more worker process of a distributed service (same Redis, prefix and log), its environment changed by `env`. */
export async function startExtraWorker(
  service: Service,
  env: Record<string, string> = {},
  label = 'worker-extra',
): Promise<ProcessGroup> {
  if (!overRedis(service.mode)) throw new Error('an extra worker needs distributed or cluster mode');
  const logFile = path.join(path.dirname(service.root), 'service.log');
  const group = spawnGroup(label, ['worker'], { ...service.env, PORT: '0', ...env }, logFile);
  try {
    await group.waitLine(/consuming/, START_TIMEOUT_MS);
    return group;
  } catch (e) {
    await stopGroup(group);
    throw e;
  }
}

/** SIGTERM the group, SIGKILL whatever is left of it after the grace period. */
export async function stopGroup(g: ProcessGroup, graceMs = STOP_GRACE_MS): Promise<void> {
  if (g.pid <= 0) return;
  g.signal('SIGTERM');
  await Promise.race([g.exited, sleep(graceMs)]);
  g.signal('SIGKILL');
  await Promise.race([g.exited, sleep(2_000)]);
}

async function waitReady(base: string, token: string | undefined, main: ProcessGroup): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (main.hasExited) throw new Error('the coordinator exited while starting');
    try {
      const r = await fetch(`${base}/readyz`, {
        signal: AbortSignal.timeout(2_000),
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      if (r.status === 200) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`GET /readyz never answered 200 (last: ${last})`);
}

let warnedStale = false;

/**
 * The processes run dist/: fails when it is missing, and warns (once per test file) when a
 * package's sources are newer than its dist/, since the suite would then test stale code.
 * Only a warning: in a shared working tree someone may be editing while the suite runs.
 */
function assertBuilt(): void {
  for (const pkg of ['shared', 'worker', 'coordinator']) {
    const dir = path.join(REPO_ROOT, 'packages', pkg);
    const built = path.join(dir, 'dist', 'index.js');
    if (!existsSync(built))
      throw new Error(`${built} is missing: run \`npx -y pnpm@12.4.2 build\` before the conformance suite`);
    const newer = newestSource(path.join(dir, 'src'));
    if (!warnedStale && newer && newer.mtimeMs > statSync(built).mtimeMs + 1_000) {
      warnedStale = true;
      console.warn(
        `conformance: ${path.relative(REPO_ROOT, newer.file)} is newer than packages/${pkg}/dist; the processes run dist/, so run \`npx -y pnpm@12.4.2 build\``,
      );
    }
  }
}

function newestSource(dir: string): { file: string; mtimeMs: number } | undefined {
  let best: { file: string; mtimeMs: number } | undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = newestSource(file);
      if (inner && (!best || inner.mtimeMs > best.mtimeMs)) best = inner;
    } else if (/\.(ts|lua)$/.test(entry.name) && !entry.name.endsWith('.test.ts')) {
      const mtimeMs = statSync(file).mtimeMs;
      if (!best || mtimeMs > best.mtimeMs) best = { file, mtimeMs };
    }
  }
  return best;
}

/** Deletes every key under `prefix:` (a shared REDIS_URL stays clean). Raw RESP: SCAN + UNLINK. */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = createConnection({ host: hostname || '127.0.0.1', port: Number(port || 6379) });
  socket.setTimeout(5_000, () => socket.destroy());
  let buf = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    waiter?.();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  const command = async (...args: string[]): Promise<unknown> => {
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    for (;;) {
      const parsed = parseResp(buf, 0);
      if (parsed) {
        buf = buf.subarray(parsed.end);
        return parsed.value;
      }
      await Promise.race([new Promise<void>((r) => (waiter = r)), closed]);
      if (socket.destroyed && !parseResp(buf, 0)) throw new Error('Redis closed the connection');
    }
  };
  try {
    let cursor = '0';
    do {
      const [next, keys] = (await command('SCAN', cursor, 'MATCH', `${prefix}:*`, 'COUNT', '1000')) as [
        string,
        string[],
      ];
      cursor = next;
      if (keys.length) await command('UNLINK', ...keys);
    } while (cursor !== '0');
  } finally {
    socket.destroy();
  }
}

function parseResp(buf: Buffer, at: number): { value: unknown; end: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[at] ?? 0);
  const head = buf.toString('utf8', at + 1, eol);
  if (type === '+' || type === ':') return { value: head, end: eol + 2 };
  if (type === '-') throw new Error(`Redis: ${head}`);
  if (type === '$') {
    const n = Number(head);
    if (n < 0) return { value: null, end: eol + 2 };
    if (buf.length < eol + 2 + n + 2) return undefined;
    return { value: buf.toString('utf8', eol + 2, eol + 2 + n), end: eol + 2 + n + 2 };
  }
  if (type === '*') {
    const items: unknown[] = [];
    let end = eol + 2;
    for (let i = 0; i < Number(head); i++) {
      const item = parseResp(buf, end);
      if (!item) return undefined;
      items.push(item.value);
      end = item.end;
    }
    return { value: items, end };
  }
  throw new Error(`unexpected RESP type ${type}`);
}

/** Members of a process group that still run (zombies don't count); Linux /proc. */
export function liveGroupMembers(pgid: number): number[] {
  const live: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') live.push(Number(p));
    } catch {
      // gone
    }
  }
  return live;
}

/** Whether a process runs (a zombie does not). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * A `sleep` argument no other process has, so its host process can be found by it: inside a
 * sandbox (API.md v1.3) a command's `$$` and `$!` are pids of its own pid namespace, not the host's.
 */
export function markedSeconds(seconds: number): string {
  return `${seconds}.${process.pid}${Math.floor(Math.random() * 1e9)}`;
}

/** Host pids of the live processes with `marker` as an argument (see markedSeconds). */
export function pidsWithArg(marker: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').includes(marker) && isRunning(Number(e)))
        pids.push(Number(e));
    } catch {
      // gone
    }
  }
  return pids;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
