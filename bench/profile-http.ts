// `node --import tsx bench/profile-http.ts` (after a build): where the Redis commands of the HTTP
// bench's rounds go, by script. A redis-server of its own, our stack (coordinator + 2 workers as
// processes), `BENCH_PROFILE_SESSIONS` sessions (default 10) doing rounds of `BENCH_PROFILE_SIZE`
// (5) `calculate` calls for `BENCH_PROFILE_MS` (3000) ms under MONITOR, after a warm-up. Every
// command inside a script (MONITOR's `lua` source) is counted under the script that ran it (named
// by its SHA-1: ours from the packages' script sources, BullMQ's from its own), and the total is
// checked against INFO commandstats around the same window.
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../test/support/redis.js';
import { ensureSessions, LoadClient, runSlice } from './http-load.js';
import { ROOT } from './http-procs.js';
import { startOursStack } from './http-stacks.js';
import { diffRedis, sampleRedis } from './redis-stats.js';

const sessions = Number(process.env.BENCH_PROFILE_SESSIONS ?? 10);
const roundSize = Number(process.env.BENCH_PROFILE_SIZE ?? 5);
const ms = Number(process.env.BENCH_PROFILE_MS ?? 3_000);
const env = process.env.BENCH_PROFILE_ENV ? (JSON.parse(process.env.BENCH_PROFILE_ENV) as Record<string, string>) : {};

/** SHA-1 → script name: every `*.lua.ts` of the packages' sources (the same text the build bundles), and BullMQ's scripts. */
async function scriptNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? walk(path.join(dir, d.name)) : d.name.endsWith('.lua.ts') ? [path.join(dir, d.name)] : [],
    );
  for (const pkg of ['shared', 'coordinator', 'worker']) {
    for (const file of walk(path.join(ROOT, 'packages', pkg, 'src'))) {
      const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
      for (const v of Object.values(mod)) {
        const s = v as { name?: unknown; sha?: unknown };
        if (typeof s?.sha === 'string' && typeof s.name === 'string') names.set(s.sha, s.name);
      }
    }
  }
  const bull = path.join(ROOT, 'packages', 'worker', 'node_modules', 'bullmq', 'dist', 'esm', 'scripts');
  for (const f of readdirSync(bull).filter((f) => f.endsWith('.js') && f !== 'index.js')) {
    const mod = (await import(pathToFileURL(path.join(bull, f)).href)) as Record<
      string,
      { name?: string; content?: string }
    >;
    for (const v of Object.values(mod))
      if (v?.content && v.name) names.set(createHash('sha1').update(v.content).digest('hex'), `bullmq ${v.name}`);
  }
  return names;
}

const names = await scriptNames();
const server = await spawnRedisServer();
const admin = new Redis(server.url);
const stack = await startOursStack({ redisUrl: server.url, workers: 2, workerConcurrency: 16, prefix: 'prof', env });
const client = new LoadClient(sessions + 10);
try {
  await ensureSessions(client, stack, sessions);
  await runSlice(client, stack, { sessions, roundSize, ms: 2_000, run: 'warm', timeoutMs: 60_000 });
  /** Script (or `-` for commands sent alone) → command → count. */
  const by = new Map<string, Map<string, number>>();
  const runs = new Map<string, number>();
  let current = '-';
  const add = (script: string, cmd: string) => {
    const m = by.get(script) ?? new Map<string, number>();
    m.set(cmd, (m.get(cmd) ?? 0) + 1);
    by.set(script, m);
  };
  let watching = true;
  // MONITOR on a plain socket: each line `+<time> [<db> <source>] "<command>" "<arg>" …`.
  const onLine = (line: string) => {
    const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"(?: "((?:[^"\\]|\\.)*)")?/.exec(line);
    if (!m || !watching) return;
    const source = m[1] as string;
    const cmd = (m[2] as string).toLowerCase();
    if (source === 'lua') {
      add(current, cmd);
      return;
    }
    if (cmd === 'evalsha' || cmd === 'eval') {
      // EVAL's source is quoted with escapes: such scripts are named by their first run (NOSCRIPT), rare.
      const sha = cmd === 'eval' ? 'eval' : String(m[3]);
      current = names.get(sha) ?? `script ${sha.slice(0, 8)}`;
      runs.set(current, (runs.get(current) ?? 0) + 1);
      add(current, cmd);
    } else {
      current = '-';
      add('-', cmd);
    }
  };
  const url = new URL(server.url);
  const monitor = createConnection({ host: url.hostname, port: Number(url.port) });
  let buffered = '';
  monitor.setEncoding('utf8');
  monitor.on('data', (chunk: string) => {
    buffered += chunk;
    let nl = buffered.indexOf('\r\n');
    while (nl >= 0) {
      onLine(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 2);
      nl = buffered.indexOf('\r\n');
    }
  });
  monitor.write('MONITOR\r\n');
  await new Promise((r) => setTimeout(r, 200));
  const r0 = await sampleRedis(admin);
  const load = await runSlice(client, stack, { sessions, roundSize, ms, run: 'prof', timeoutMs: 60_000 });
  const r1 = await sampleRedis(admin);
  await new Promise((r) => setTimeout(r, 200));
  watching = false;
  monitor.destroy();
  const stats = diffRedis(r0, r1);
  const per = (n: number) => (n / load.calls).toFixed(2);
  let total = 0;
  const rows: [string, number, Map<string, number>][] = [];
  for (const [script, m] of by) {
    const n = [...m.values()].reduce((a, b) => a + b, 0);
    total += n;
    rows.push([script, n, m]);
  }
  rows.sort((a, b) => b[1] - a[1]);
  console.log(
    `${sessions} sessions × rounds of ${roundSize}: ${load.rounds} rounds, ${load.calls} calls, ${JSON.stringify(load.statuses)}; ` +
      `MONITOR saw ${per(total)} commands per call (INFO commandstats ${per(stats.commands)}, MONITOR and INFO themselves included)`,
  );
  for (const [script, n, m] of rows) {
    const calls = script === '-' ? '' : ` run ${((runs.get(script) ?? 0) / load.rounds).toFixed(2)}× per round,`;
    const inner = [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([c, k]) => `${c} ${per(k)}`)
      .join(', ');
    console.log(`  ${script.padEnd(26)} ${per(n).padStart(6)} per call,${calls} ${inner}`);
  }
} finally {
  await stack.stop();
  admin.disconnect();
  await server.stop();
}
