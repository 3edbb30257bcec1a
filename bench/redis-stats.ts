// What one redis-server did between two samples: commands (each by name, as INFO commandstats counts
// them, Lua scripts' inner commands included), bytes in and out, keys, and its CPU time (/proc).

import type { Redis } from 'ioredis';
import { cpuMsOf } from './http-procs.js';

export interface RedisSample {
  commands: number;
  netInBytes: number;
  netOutBytes: number;
  cpuMs: number;
  keys: number;
  byCommand: Record<string, number>;
}

export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

export async function sampleRedis(redis: Redis): Promise<RedisSample> {
  const info = parseInfo(await redis.info('everything'));
  const byCommand: Record<string, number> = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    const calls = /calls=(\d+)/.exec(v);
    if (calls) byCommand[k.slice('cmdstat_'.length)] = Number(calls[1]);
  }
  const keyspace = /keys=(\d+)/.exec(info.db0 ?? '');
  const pid = Number(info.process_id);
  // /proc when the server is on this machine, else INFO's own figures.
  let cpuMs: number;
  try {
    cpuMs = cpuMsOf(pid);
  } catch {
    cpuMs = (Number(info.used_cpu_user) + Number(info.used_cpu_sys)) * 1000;
  }
  return {
    commands: Number(info.total_commands_processed),
    netInBytes: Number(info.total_net_input_bytes),
    netOutBytes: Number(info.total_net_output_bytes),
    cpuMs,
    keys: keyspace ? Number(keyspace[1]) : 0,
    byCommand,
  };
}

/** `after - before`, the commands by name sorted by count (largest first). */
export function diffRedis(before: RedisSample, after: RedisSample): RedisSample {
  const byCommand: Record<string, number> = {};
  const names = Object.keys(after.byCommand).sort(
    (a, b) =>
      (after.byCommand[b] ?? 0) - (before.byCommand[b] ?? 0) - ((after.byCommand[a] ?? 0) - (before.byCommand[a] ?? 0)),
  );
  for (const k of names) {
    const d = (after.byCommand[k] ?? 0) - (before.byCommand[k] ?? 0);
    if (d > 0) byCommand[k] = d;
  }
  return {
    commands: after.commands - before.commands,
    netInBytes: after.netInBytes - before.netInBytes,
    netOutBytes: after.netOutBytes - before.netOutBytes,
    cpuMs: after.cpuMs - before.cpuMs,
    keys: after.keys - before.keys,
    byCommand,
  };
}
