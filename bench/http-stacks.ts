// The two sides of the HTTP bench as real processes on one Redis: the project (`tool-dispatch
// coordinator` + N × `tool-dispatch worker`) and the peer (bench/http-peer.ts + N ×
// bench/http-peer-worker.ts), each worker with the same concurrency.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/net.js';
import { BIN, type Child, startChild, stopChild } from './http-procs.js';

export type SideName = 'ours' | 'peer';

/** One side's processes: its HTTP front (`front`) and its workers. */
export interface Stack {
  side: SideName;
  port: number;
  front: Child;
  workers: Child[];
  /** Sessions created so far (`s0` … `s<n-1>`). */
  sessions: number;
  stop(): Promise<void>;
}

export interface StackOptions {
  redisUrl: string;
  workers: number;
  workerConcurrency: number;
  /** Key prefix of this stack, so stacks sharing the Redis never see each other's keys. */
  prefix: string;
  /** Extra environment for every process of the stack; `REDIS_URL: undefined` with REDIS_CLUSTER_NODES for a cluster. */
  env?: Record<string, string | undefined>;
}

const node = process.execPath;
// BENCH_CPU_PROF_DIR: every process of both stacks writes a V8 CPU profile there as it exits
// (node's --cpu-prof; summarise one with bench/cpu-profile-summary.ts).
const PROF_DIR = process.env.BENCH_CPU_PROF_DIR;
const PROF = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROF_DIR)}`] : [];
const TSX = [...PROF, '--import', 'tsx'];
const CLI = fileURLToPath(new URL('../packages/coordinator/dist/cli.js', import.meta.url));
/** Our CLI: the bin script, or node with the profiler on the same entry point. */
const ours = (args: string[]) => (PROF_DIR ? { command: node, args: [...PROF, CLI, ...args] } : { command: BIN, args });

export async function startOursStack(options: StackOptions): Promise<Stack> {
  const root = mkdtempSync(path.join(tmpdir(), 'td-bench-http-'));
  const env = {
    REDIS_URL: options.redisUrl,
    TD_PREFIX: options.prefix,
    TD_WORKSPACE_ROOT: root,
    TD_WORKER_CONCURRENCY: String(options.workerConcurrency),
    ...options.env,
  };
  const workers = await Promise.all(
    Array.from({ length: options.workers }, (_, i) =>
      startChild({
        label: `worker ${i + 1}`,
        ...ours(['worker', '--port', '0']),
        env,
        ready: /consuming/,
      }),
    ),
  );
  const port = await freePort();
  const front = await startChild({
    label: 'coordinator',
    ...ours(['coordinator', '--host', '127.0.0.1', '--port', String(port)]),
    env,
    ready: /listening on/,
  });
  await waitReady(port);
  return {
    side: 'ours',
    port,
    front,
    workers,
    sessions: 0,
    async stop() {
      await stopChild(front);
      await Promise.all(workers.map((w) => stopChild(w)));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function startPeerStack(options: StackOptions): Promise<Stack> {
  const args = [options.redisUrl, options.prefix];
  const workers = await Promise.all(
    Array.from({ length: options.workers }, (_, i) =>
      startChild({
        label: `peer worker ${i + 1}`,
        command: node,
        args: [...TSX, 'bench/http-peer-worker.ts', ...args, String(options.workerConcurrency)],
        env: {},
        ready: /consuming/,
      }),
    ),
  );
  const port = await freePort();
  const front = await startChild({
    label: 'peer server',
    command: node,
    args: [...TSX, 'bench/http-peer.ts', ...args, String(port)],
    env: {},
    ready: /listening on/,
  });
  return {
    side: 'peer',
    port,
    front,
    workers,
    sessions: 0,
    async stop() {
      await stopChild(front);
      await Promise.all(workers.map((w) => stopChild(w)));
    },
  };
}

/** Waits for the coordinator's /readyz (a worker alive, the store usable). */
async function waitReady(port: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the coordinator on ${port} was not ready within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
