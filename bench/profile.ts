// `node --cpu-prof --import tsx bench/profile.ts [ours|peer]`: one side's 50-run load alone, for a
// CPU profile of where its Node time goes (the figures themselves come from `pnpm bench`).
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';
import { type Side, startOurs, startPeer, throughputBlock } from './distributed.js';

const which = process.argv[2] === 'peer' ? 'peer' : 'ours';
const ms = Number(process.env.BENCH_DIST_MS ?? 5_000);
const concurrency = Number(process.env.TD_WORKER_CONCURRENCY ?? 16);
const progress = (s: string) => process.stderr.write(`  … ${s}\n`);

const counts = new Map<string, number>();
if (process.env.BENCH_COUNT_COMMANDS) {
  const proto = Redis.prototype as unknown as { sendCommand(c: { name: string; args: unknown[] }): unknown };
  const orig = proto.sendCommand;
  proto.sendCommand = function (this: unknown, c: { name: string; args: unknown[] }) {
    const k = c.name === 'evalsha' ? `evalsha ${String(c.args[0]).slice(0, 6)}` : c.name;
    counts.set(k, (counts.get(k) ?? 0) + 1);
    return orig.call(this, c);
  };
}
const server = await spawnRedisServer();
const admin = new Redis(server.url);
const side: Side =
  which === 'ours' ? await startOurs(server.url, concurrency, progress) : await startPeer(server.url, concurrency);
await throughputBlock(side, 1_000);
counts.clear();
const cpu0 = process.cpuUsage();
// BENCH_PROFILE_RUNS=1: one run's rounds one after another (the latency test), else 50 runs at once.
const t = process.env.BENCH_PROFILE_RUNS === '1' ? await sequentialBlock(side, ms) : await throughputBlock(side, ms);
const cpu = process.cpuUsage(cpu0);
console.log(
  `${which}: ${((t.calls * 1000) / t.elapsedMs).toFixed(0)} calls/s, node CPU ${((cpu.user + cpu.system) / t.calls).toFixed(0)} µs/call`,
);
if (counts.size)
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(`${k}: ${((v / t.calls) * 5).toFixed(2)} per round`);
async function sequentialBlock(s: Side, forMs: number): Promise<{ calls: number; elapsedMs: number }> {
  const t0 = performance.now();
  let rounds = 0;
  while (performance.now() - t0 < forMs) {
    await s.round(0);
    rounds++;
  }
  return { calls: rounds * 5, elapsedMs: performance.now() - t0 };
}

const keepAlive = setInterval(() => {}, 1_000);
await side.close();
admin.disconnect();
await server.stop();
clearInterval(keepAlive);
