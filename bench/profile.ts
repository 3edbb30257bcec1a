// `node --cpu-prof --import tsx bench/profile.ts [ours|peer]`: one side's 50-run load alone, for a
// CPU profile of where its Node time goes (the figures themselves come from `pnpm bench`).
// BENCH_PROFILE_RUNS=1: the one-run latency load instead; BENCH_COUNT_COMMANDS=1: commands sent per
// round; BENCH_SLOWLOG=1: Redis's time per command and script per round.
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
// BENCH_SLOWLOG=1: Redis's own time per command and script (SLOWLOG of every command).
const slowlog = Boolean(process.env.BENCH_SLOWLOG);
if (slowlog) {
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.config('SET', 'slowlog-max-len', '1000000');
  await admin.slowlog('RESET');
}
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
if (slowlog) {
  const rounds = t.calls / 5;
  const entries = (await admin.slowlog('GET', -1)) as [number, number, number, unknown[]][];
  const by = new Map<string, { n: number; us: number }>();
  for (const [, , us, args] of entries) {
    const cmd = String(args[0]).toLowerCase();
    const name = cmd === 'evalsha' ? `evalsha ${String(args[1]).slice(0, 6)}, ${String(args[2])} keys` : cmd;
    const e = by.get(name) ?? { n: 0, us: 0 };
    e.n++;
    e.us += us;
    by.set(name, e);
  }
  console.log(`Redis time per round (${entries.length} commands logged; scripts by sha and number of keys):`);
  for (const [name, e] of [...by].sort((a, b) => b[1].us - a[1].us).slice(0, 20))
    console.log(
      `  ${name.padEnd(28)} ${(e.n / rounds).toFixed(2).padStart(6)}/round  ${(e.us / e.n).toFixed(1).padStart(6)} µs each  ${(e.us / rounds).toFixed(1).padStart(7)} µs/round`,
    );
}
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
