import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './net.js';
import { waitFor as waitWithin, withFreshPorts } from './redis-cluster.js';

const run = promisify(execFile);
const READY_TIMEOUT_MS = 30_000;
const waitFor = (check: () => Promise<boolean>, what: string) => waitWithin(check, what, READY_TIMEOUT_MS);

/**
 * A real Redis Cluster of 3 primaries with `replicas` replicas each (no Docker), as the
 * durability tests need it: `cluster-node-timeout` 2 s, AOF `always`, DEBUG enabled from
 * loopback, so a primary can be paused (SIGSTOP, DEBUG SLEEP), killed or failed over.
 */
export interface ReplicatedCluster {
  /** REDIS_CLUSTER_NODES's value (the first three nodes). */
  seeds: string;
  ports: number[];
  nodeTimeoutMs: number;
  /** The port of the primary that serves `hashTag`'s slot now (asked of a node that answers). */
  primaryOf(hashTag: string): Promise<number>;
  /** The ports of `primary`'s replicas. */
  replicasOf(primary: number): Promise<number[]>;
  /** `redis-cli -p port args…` with a 3 s limit ('' when the node does not answer). */
  cli(port: number, ...args: string[]): Promise<string>;
  pause(port: number): void;
  resume(port: number): void;
  kill(port: number): Promise<void>;
  /** Starts a killed node again with its data; resolves once the cluster says ok everywhere. */
  revive(port: number): Promise<void>;
  /** Resolves once every running node says `cluster_state:ok`. */
  waitOk(): Promise<void>;
  stop(): Promise<void>;
}

export function startReplicatedCluster(replicas: 1 | 2 = 1): Promise<ReplicatedCluster> {
  return withFreshPorts(() => startOnce(replicas));
}

async function startOnce(replicas: number): Promise<ReplicatedCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-redis-replicated-'));
  const count = 3 * (1 + replicas);
  const ports: number[] = [];
  const busPorts: number[] = [];
  for (let i = 0; i < count; i++) {
    ports.push(await freePort());
    busPorts.push(await freePort());
  }
  const procs = new Map<number, ChildProcess>();
  const nodeTimeoutMs = 2_000;
  const cli = async (port: number, ...args: string[]) => {
    try {
      return (await run('redis-cli', ['-p', String(port), ...args], { timeout: 3_000 })).stdout;
    } catch {
      return '';
    }
  };
  const start = async (i: number) => {
    const port = ports[i] as number;
    const nodeDir = path.join(dir, String(port));
    await mkdir(nodeDir, { recursive: true });
    // biome-ignore format: one flag and its value a line
    const p = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1',
      '--cluster-enabled', 'yes', '--cluster-port', String(busPorts[i]), '--cluster-config-file', 'nodes.conf',
      '--cluster-node-timeout', String(nodeTimeoutMs),
      '--appendonly', 'yes', '--appendfsync', 'always', '--save', '',
      '--enable-debug-command', 'local', '--dir', nodeDir,
    ], { stdio: 'ignore' });
    procs.set(port, p);
    await waitFor(async () => (await cli(port, 'ping')).trim() === 'PONG', `redis-server on ${port}`);
  };
  const running = () => ports.filter((p) => procs.get(p)?.exitCode === null && procs.get(p)?.signalCode === null);
  const waitOk = () =>
    waitFor(async () => {
      const infos = await Promise.all(running().map((p) => cli(p, 'cluster', 'info')));
      return infos.every((i) => /cluster_state:ok/.test(i));
    }, 'cluster_state:ok on every node');
  /** CLUSTER NODES from the first node that answers. */
  const nodesTable = async () => {
    for (const p of running()) {
      const out = await cli(p, 'cluster', 'nodes');
      if (out.trim()) return out.trim().split('\n');
    }
    throw new Error('no node answers CLUSTER NODES');
  };
  const portOf = (addr: string) => Number(addr.split('@')[0]?.split(':')[1]);
  try {
    await Promise.all(ports.map((_, i) => start(i)));
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicas), '--cluster-yes']);
    await waitOk();
    // Every replica linked to its primary before the tests start.
    await waitFor(async () => {
      const lines = await nodesTable();
      return lines.filter((l) => / slave /.test(l) || /,slave /.test(l)).length === 3 * replicas;
    }, 'every replica known');
    const kill = async (port: number) => {
      const p = procs.get(port);
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await exited;
    };
    return {
      seeds: nodes.slice(0, 3).join(','),
      ports,
      nodeTimeoutMs,
      cli,
      waitOk,
      primaryOf: async (hashTag) => {
        const slot = Number((await cli(ports[0] as number, 'cluster', 'keyslot', `{${hashTag}}`)).trim());
        for (const line of await nodesTable()) {
          const f = line.split(' ');
          if (!f[2]?.includes('master') || f[2].includes('fail')) continue;
          for (const range of f.slice(8)) {
            const [lo, hi] = range.split('-').map(Number);
            if (lo !== undefined && slot >= lo && slot <= (hi ?? lo)) return portOf(f[1] as string);
          }
        }
        throw new Error(`no primary serves slot ${slot}`);
      },
      replicasOf: async (primary) => {
        const lines = (await nodesTable()).map((l) => l.split(' '));
        const id = lines.find((f) => portOf(f[1] as string) === primary)?.[0];
        return lines.filter((f) => f[3] === id).map((f) => portOf(f[1] as string));
      },
      pause: (port) => procs.get(port)?.kill('SIGSTOP'),
      resume: (port) => procs.get(port)?.kill('SIGCONT'),
      kill,
      revive: async (port) => {
        await start(ports.indexOf(port));
        await waitOk();
      },
      stop: async () => {
        for (const p of procs.values()) {
          p.kill('SIGCONT');
          p.kill('SIGKILL');
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    for (const p of procs.values()) p.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}
