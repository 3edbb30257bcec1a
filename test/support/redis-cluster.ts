import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './net.js';
import { until } from './until.js';

const run = promisify(execFile);
const READY_TIMEOUT_MS = 20_000;

/** A real Redis Cluster of three primaries for one test file (no Docker: redis-server and redis-cli). */
export interface TestRedisCluster {
  /** `host:port` of each primary, for REDIS_CLUSTER_NODES. */
  nodes: string[];
  /** REDIS_CLUSTER_NODES's value. */
  seeds: string;
  stop(): Promise<void>;
  /** Restarts one primary with its data (AOF on), as a crash and restart would; the cluster is whole again once it answers. */
  restart(index: number): Promise<void>;
  /** Kills one primary (SIGKILL) and leaves it down: its slots are unreachable until `revive`. */
  kill(index: number): Promise<void>;
  /** Starts a killed primary again with its data; resolves once the cluster is whole. */
  revive(index: number): Promise<void>;
}

/**
 * Three `redis-server --cluster-enabled yes` on free ports in a temp dir, joined with
 * `redis-cli --cluster create … --cluster-replicas 0`; resolves once every node says
 * `cluster_state:ok`. AOF is on, so a restarted primary keeps its keys.
 */
export async function startRedisCluster(): Promise<TestRedisCluster> {
  return withFreshPorts(startOnce);
}

/**
 * Runs `start` again on new ports when it fails: a port found free can be taken by another test
 * file before redis-server binds it, and the server then exits at once (seen once in CI).
 */
export async function withFreshPorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  const errors: string[] = [];
  for (let i = 0; i < attempts; i++) {
    try {
      return await start();
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  throw new Error(
    `could not start Redis in ${attempts} tries (redis-server and redis-cli on PATH?): ${errors.join(' | ')}`,
  );
}

async function startOnce(): Promise<TestRedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-redis-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  // The cluster bus port is its own free port: the default (port + 10000) does not exist for a
  // port above 55535, which the ephemeral range (up to 60999) hands out about one time in five.
  const busPorts = [await freePort(), await freePort(), await freePort()];
  const procs: ChildProcess[] = [];
  const start = async (i: number) => {
    const port = ports[i] as number;
    const nodeDir = path.join(dir, String(port));
    await mkdir(nodeDir, { recursive: true });
    const p = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(busPorts[i]),
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '5000',
        '--appendonly',
        'yes',
        // Every write on disk before its reply, so a killed primary comes back with all of it.
        '--appendfsync',
        'always',
        '--save',
        '',
        '--dir',
        nodeDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs[i] = p;
    let output = '';
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-2000);
    };
    p.stdout?.on('data', keep);
    p.stderr?.on('data', keep);
    await waitFor(async () => {
      if (p.exitCode !== null || p.signalCode !== null) {
        throw new Error(`redis-server on ${port} exited (${p.exitCode ?? p.signalCode}): ${lastLine(output)}`);
      }
      return (await cli(port, 'ping')).trim() === 'PONG';
    }, `redis-server on ${port}`);
  };
  const kill = async (i: number) => {
    const p = procs[i];
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  try {
    await Promise.all(ports.map((_, i) => start(i)));
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes']);
    await waitForClusterOk(ports);
    return {
      nodes,
      seeds: nodes.join(','),
      stop: async () => {
        for (const p of procs) p.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      },
      restart: async (i) => {
        await kill(i);
        await start(i);
        await waitForClusterOk(ports);
      },
      kill: (i) => kill(i),
      revive: async (i) => {
        await start(i);
        await waitForClusterOk(ports);
      },
    };
  } catch (e) {
    for (const p of procs) p.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

function lastLine(output: string): string {
  return output.trim().split('\n').pop() ?? 'no output';
}

async function cli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await run('redis-cli', ['-p', String(port), ...args])).stdout;
  } catch {
    return '';
  }
}

async function waitForClusterOk(ports: readonly number[]): Promise<void> {
  await waitFor(async () => {
    const infos = await Promise.all(ports.map((p) => cli(p, 'cluster', 'info')));
    return infos.every((i) => /cluster_state:ok/.test(i) && /cluster_known_nodes:3/.test(i));
  }, 'cluster_state:ok on every node');
}

/** Polls `check` every 100 ms until it holds, or fails naming `what` after `timeoutMs`. */
export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  await until(check, { timeoutMs, what, intervalMs: 100 });
}
