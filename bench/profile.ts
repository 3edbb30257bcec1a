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
const t = await throughputBlock(side, ms);
const cpu = process.cpuUsage(cpu0);
console.log(
  `${which}: ${((t.calls * 1000) / t.elapsedMs).toFixed(0)} calls/s, node CPU ${((cpu.user + cpu.system) / t.calls).toFixed(0)} µs/call`,
);
if (counts.size)
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(`${k}: ${((v / t.calls) * 5).toFixed(2)} per round`);
const keepAlive = setInterval(() => {}, 1_000);
await side.close();
admin.disconnect();
await server.stop();
clearInterval(keepAlive);
