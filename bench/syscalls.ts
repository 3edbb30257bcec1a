// `BENCH_ONLY=syscalls`: the system calls each process of both HTTP bench sides makes per round at
// one session (rounds of 5 `calculate` calls back to back), counted by `strace -c -f` attached to
// the coordinator (or peer server), each worker and redis-server. At one session a round's latency
// is a chain of socket writes, reads and event-loop wake-ups across those processes; this is that
// chain's length, next to the latency and CPU figures of `BENCH_ONLY=http`.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';
import { ensureSessions, LoadClient } from './http-load.js';
import { type Stack, type StackOptions, startOursStack, startPeerStack } from './http-stacks.js';

export interface SyscallsOptions {
  /** Rounds counted per side (BENCH_SYSCALL_ROUNDS), after as many to warm up. */
  rounds: number;
  workerConcurrency: number;
}

/** Calls per round of one process, by group; `total` is every system call. */
export interface ProcessSyscalls {
  label: string;
  reads: number;
  writes: number;
  waits: number;
  futex: number;
  total: number;
}

export interface SyscallsFigures {
  options: SyscallsOptions;
  sides: Record<'ours' | 'peer', { processes: ProcessSyscalls[]; roundMs: number }>;
}

export function syscallsOptionsFromEnv(env = process.env): SyscallsOptions {
  return {
    rounds: Number(env.BENCH_SYSCALL_ROUNDS ?? 300),
    workerConcurrency: Number(env.TD_WORKER_CONCURRENCY ?? 16),
  };
}

const GROUPS: Record<'reads' | 'writes' | 'waits' | 'futex', readonly string[]> = {
  reads: ['read', 'readv', 'recvfrom', 'recvmsg'],
  writes: ['write', 'writev', 'sendto', 'sendmsg'],
  waits: ['epoll_wait', 'epoll_pwait', 'epoll_pwait2'],
  futex: ['futex'],
};

/** The `calls` column of `strace -c`'s table, by system call name. */
export function parseStraceSummary(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    // % time  seconds  usecs/call  calls  [errors]  syscall
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (m && m[2] !== 'total') counts.set(m[2] as string, Number(m[1]));
  }
  return counts;
}

function attach(pid: number, out: string): ChildProcess {
  return spawn('strace', ['-c', '-f', '-o', out, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
}

async function detach(tracer: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => tracer.once('exit', () => resolve()));
  tracer.kill('SIGINT');
  await exited;
}

function callsOf(n: number) {
  return Array.from({ length: 5 }, (_, c) => ({
    id: `c${c}`,
    name: 'calculate',
    args: { expression: `${n} * 7 + ${c}` },
  }));
}

let expression = 0;

async function rounds(client: LoadClient, stack: Stack, count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const r = await client.send(
      stack.port,
      'POST',
      '/v1/sessions/s0/runs/syscalls/rounds',
      { calls: callsOf(expression++) },
      30_000,
    );
    if (r.status !== 200) throw new Error(`${stack.side}: a round answered ${r.status} ${JSON.stringify(r.body)}`);
  }
  return (performance.now() - t0) / count;
}

async function measureSide(
  client: LoadClient,
  stack: Stack,
  redisPid: number,
  options: SyscallsOptions,
  progress: (s: string) => void,
) {
  await ensureSessions(client, stack, 1);
  await rounds(client, stack, options.rounds);
  const dir = mkdtempSync(path.join(tmpdir(), 'td-bench-strace-'));
  const procs = [
    { label: stack.front.label, pid: stack.front.pid },
    ...stack.workers.map((w) => ({ label: w.label, pid: w.pid })),
    { label: 'redis-server', pid: redisPid },
  ];
  try {
    const tracers = procs.map((p, i) => attach(p.pid, path.join(dir, `${i}.txt`)));
    await new Promise((r) => setTimeout(r, 1_000)); // attached to every thread
    progress(`${stack.side}: ${options.rounds} rounds under strace`);
    const roundMs = await rounds(client, stack, options.rounds);
    await Promise.all(tracers.map(detach));
    const processes = procs.map((p, i): ProcessSyscalls => {
      const counts = parseStraceSummary(readFileSync(path.join(dir, `${i}.txt`), 'utf8'));
      const per = (names: readonly string[]) => names.reduce((n, s) => n + (counts.get(s) ?? 0), 0) / options.rounds;
      const total = [...counts.values()].reduce((a, b) => a + b, 0) / options.rounds;
      return {
        label: p.label,
        reads: per(GROUPS.reads),
        writes: per(GROUPS.writes),
        waits: per(GROUPS.waits),
        futex: per(GROUPS.futex),
        total,
      };
    });
    return { processes, roundMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchSyscalls(options: SyscallsOptions, progress: (s: string) => void): Promise<SyscallsFigures> {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
  } catch {
    throw new Error('BENCH_ONLY=syscalls needs strace on PATH (apt-get install strace)');
  }
  const server = await spawnRedisServer();
  const redis = new Redis(server.url);
  const client = new LoadClient(1);
  const base: Omit<StackOptions, 'prefix'> = {
    redisUrl: server.url,
    workers: 2,
    workerConcurrency: options.workerConcurrency,
  };
  try {
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    progress('starting the project (coordinator + 2 workers) and the peer (server + 2 workers)');
    const ours = await startOursStack({ ...base, prefix: 'bench-sys' });
    try {
      const peer = await startPeerStack({ ...base, prefix: 'bench-sys-peer' });
      try {
        const oursFigures = await measureSide(client, ours, redisPid, options, progress);
        const peerFigures = await measureSide(client, peer, redisPid, options, progress);
        return { options, sides: { ours: oursFigures, peer: peerFigures } };
      } finally {
        await peer.stop();
      }
    } finally {
      await ours.stop();
    }
  } finally {
    client.close();
    redis.disconnect();
    const keepAlive = setInterval(() => undefined, 1_000);
    await server.stop().finally(() => clearInterval(keepAlive));
  }
}

export function printSyscalls(f: SyscallsFigures): void {
  console.log(
    `\nSystem calls per round at one session (rounds of 5 calculate calls, 2 workers a side; strace -c over ${f.options.rounds} rounds)`,
  );
  console.log('  side  process              reads  writes  epoll waits   futex   all');
  const n = (v: number, w: number) => v.toFixed(1).padStart(w);
  for (const side of ['ours', 'peer'] as const) {
    const { processes } = f.sides[side];
    for (const p of processes)
      console.log(
        `  ${side.padEnd(5)} ${p.label.padEnd(18)} ${n(p.reads, 6)} ${n(p.writes, 7)} ${n(p.waits, 12)} ${n(p.futex, 7)} ${n(p.total, 5)}`,
      );
    const sum = (k: keyof Omit<ProcessSyscalls, 'label'>) => processes.reduce((a, p) => a + p[k], 0);
    console.log(
      `  ${side.padEnd(5)} ${'all processes'.padEnd(18)} ${n(sum('reads'), 6)} ${n(sum('writes'), 7)} ${n(sum('waits'), 12)} ${n(sum('futex'), 7)} ${n(sum('total'), 5)}`,
    );
  }
  const all = (side: 'ours' | 'peer', k: 'writes' | 'waits') => f.sides[side].processes.reduce((a, p) => a + p[k], 0);
  console.log(
    `  ours/peer: writes ${(all('ours', 'writes') / all('peer', 'writes')).toFixed(2)}×, wake-ups ${(all('ours', 'waits') / all('peer', 'waits')).toFixed(2)}× (round time under strace ${f.sides.ours.roundMs.toFixed(1)} / ${f.sides.peer.roundMs.toFixed(1)} ms, not a latency figure)`,
  );
}
