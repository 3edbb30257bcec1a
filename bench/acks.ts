// BENCH_ONLY=acks: what TD_REDIS_REPLICA_ACKS=1 costs per round against 0, in one run: the same
// engine and workers twice (two prefixes) on one redis-server with one replica, rounds of 5
// no-op calls, latency blocks and 50-run throughput slices alternating between the two.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../test/support/net.js';
import { spawnRedisServer } from '../test/support/redis.js';
import { latencyBlock, type Side, startOurs, throughputBlock } from './distributed.js';

export interface AcksFigures {
  p50Ms: { acks0: number; acks1: number };
  callsPerSec: { acks0: number; acks1: number };
  /** acks 1 over acks 0: latency (above 1× is slower) and throughput (below 1× is fewer calls/s). */
  ratios: { p50: number; throughput: number };
}

const BLOCK = 50;
const SLICES = 6;

export async function benchAcks(
  options: { rounds: number; throughputMs: number; concurrency: number },
  progress: (s: string) => void,
): Promise<AcksFigures> {
  // The spawned redis-servers are unref'd: the loop is kept alive until the end.
  const keepAlive = setInterval(() => {}, 1_000);
  const primary = await spawnRedisServer();
  const replicaPort = await freePort();
  const replicaDir = mkdtempSync(path.join(tmpdir(), 'td-bench-replica-'));
  const replica: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(replicaPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      replicaDir,
      '--replicaof',
      '127.0.0.1',
      new URL(primary.url).port,
    ],
    { stdio: 'ignore' },
  );
  const probe = new Redis(primary.url);
  for (let i = 0; !/slave0:.*state=online/.test(await probe.info('replication')); i++) {
    if (i > 200) throw new Error('the replica did not link in 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  probe.disconnect();
  progress(`acks: redis-server ${primary.url} with one replica on ${replicaPort}`);
  const sides: Record<'acks0' | 'acks1', Side> = {
    acks0: await startOurs(primary.url, options.concurrency, progress, {
      prefix: 'bench-acks0',
      config: { redisReplicaAcks: 0 },
    }),
    acks1: await startOurs(primary.url, options.concurrency, progress, {
      prefix: 'bench-acks1',
      config: { redisReplicaAcks: 1 },
    }),
  };
  try {
    const lat = { acks0: [] as number[], acks1: [] as number[] };
    for (const k of ['acks0', 'acks1'] as const) await latencyBlock(sides[k], 20, []); // warm-up
    for (let done = 0; done < options.rounds; done += BLOCK)
      for (const k of done % (2 * BLOCK) === 0 ? (['acks0', 'acks1'] as const) : (['acks1', 'acks0'] as const))
        await latencyBlock(sides[k], BLOCK, lat[k]);
    const calls = { acks0: 0, acks1: 0 };
    const ms = { acks0: 0, acks1: 0 };
    const sliceRatios: number[] = [];
    for (let s = 0; s < SLICES; s++) {
      const rate = { acks0: 0, acks1: 0 };
      // Which side goes first alternates, so neither always follows the other's leftovers.
      for (const k of s % 2 === 0 ? (['acks0', 'acks1'] as const) : (['acks1', 'acks0'] as const)) {
        const t = await throughputBlock(sides[k], options.throughputMs / SLICES);
        calls[k] += t.calls;
        ms[k] += t.elapsedMs;
        rate[k] = t.calls / t.elapsedMs;
      }
      sliceRatios.push(rate.acks1 / rate.acks0);
    }
    const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const p50Ms = { acks0: p50(lat.acks0), acks1: p50(lat.acks1) };
    const callsPerSec = { acks0: (calls.acks0 / ms.acks0) * 1000, acks1: (calls.acks1 / ms.acks1) * 1000 };
    return {
      p50Ms,
      callsPerSec,
      // Throughput: the median of back-to-back slice ratios (the machine's load drifts between slices).
      ratios: { p50: p50Ms.acks1 / p50Ms.acks0, throughput: p50(sliceRatios) },
    };
  } finally {
    await sides.acks0.close();
    await sides.acks1.close();
    replica.kill('SIGKILL');
    await primary.stop();
    rmSync(replicaDir, { recursive: true, force: true });
    clearInterval(keepAlive);
  }
}

export function printAcks(f: AcksFigures): void {
  console.log('\nTD_REDIS_REPLICA_ACKS=1 against 0 (one replica, rounds of 5 no-op calls: WAIT at begin and commit)');
  console.log(
    `  acks 0     round p50 ${f.p50Ms.acks0.toFixed(2)} ms   50 runs at once ${f.callsPerSec.acks0.toFixed(0)} calls/s`,
  );
  console.log(
    `  acks 1     round p50 ${f.p50Ms.acks1.toFixed(2)} ms   50 runs at once ${f.callsPerSec.acks1.toFixed(0)} calls/s`,
  );
  console.log(`  1 / 0      latency ${f.ratios.p50.toFixed(2)}×   throughput ${f.ratios.throughput.toFixed(2)}×`);
}
