import { Redis } from 'ioredis';
import { type RoundRecord, recovered } from './load.js';

// What Redis holds of a round the load could not get answered, for the failure message of a fault
// test: the round record (state, owner, origin), every key naming the round (outcome keys, cancel
// marks, BullMQ jobs) and which BullMQ list each job sits in.

const QUEUES = ['{td-concurrent}', '{td-serial}'] as const;
const LISTS = ['wait', 'active', 'paused'] as const;
const ZSETS = ['completed', 'failed', 'delayed', 'prioritized', 'stalled'] as const;
const JOB_FIELDS = [
  'name',
  'processedOn',
  'finishedOn',
  'failedReason',
  'attemptsStarted',
  'stc',
  'atm',
  'returnvalue',
];

/** A text report of round `n` of `session` (its Idempotency-Key `<session>-r<n>`, as support/load.ts sends it). */
export async function describeStuckRound(
  redisUrl: string,
  prefix: string,
  ref: { session: string; run: string; round: number },
): Promise<string> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const lines: string[] = [];
  try {
    const s = `${prefix}:{s:${ref.session}}`;
    const held = await redis.get(`${s}:idem:${ref.run}:${ref.session}-r${ref.round}`);
    const roundId = held?.split('|')[0];
    lines.push(`idempotency key → ${held ?? 'none'}`);
    if (!roundId) return lines.join('\n');
    const record = await redis.hgetall(`${s}:round:${ref.run}:${roundId}`);
    const { calls: _calls, planned, response, ...rest } = record;
    lines.push(`round ${roundId}: ${JSON.stringify(rest)} planned=${planned ? 'kept' : 'none'} response=${!!response}`);
    for (const key of (await redis.keys(`${prefix}:*${roundId}*`)).sort()) {
      const type = await redis.type(key);
      if (type === 'string') lines.push(`${key} = ${(await redis.get(key))?.slice(0, 200)}`);
      else if (type === 'hash') {
        const fields = await redis.hmget(key, ...JOB_FIELDS);
        const shown = JOB_FIELDS.map((f, i) => `${f}=${fields[i]?.slice(0, 120) ?? '-'}`).join(' ');
        lines.push(`${key} (hash) ${shown} in ${await whereIs(redis, prefix, key)}`);
      } else lines.push(`${key} (${type})`);
    }
  } catch (e) {
    lines.push(`(Redis could not be read: ${(e as Error).message})`);
  } finally {
    redis.disconnect();
  }
  return lines.join('\n');
}

/** The BullMQ lists and sets that hold the job whose hash is `key`. */
async function whereIs(redis: Redis, prefix: string, key: string): Promise<string> {
  const found: string[] = [];
  for (const q of QUEUES) {
    const base = `${prefix}:${q}:`;
    if (!key.startsWith(base)) continue;
    const id = key.slice(base.length);
    for (const list of LISTS) if ((await redis.lpos(`${base}${list}`, id)) !== null) found.push(list);
    for (const set of ZSETS) {
      const t = await redis.type(`${base}${set}`);
      if (t === 'zset' && (await redis.zscore(`${base}${set}`, id)) !== null) found.push(set);
      if (t === 'set' && (await redis.sismember(`${base}${set}`, id)) === 1) found.push(set);
    }
  }
  return found.length > 0 ? found.join(',') : 'no list';
}

/**
 * recovered(), its failure naming the fault and showing what Redis (at `redisUrl`, keys under
 * `prefix`) holds of the first rounds left unanswered.
 */
export async function recoveredFrom(
  fault: string,
  rounds: readonly RoundRecord[],
  at: number,
  redisUrl: string,
  prefix: string,
): Promise<{ ms: number; caught: number }> {
  try {
    return await recovered(rounds, at);
  } catch (e) {
    const stuck = rounds.filter((r) => r.startedAt <= at && r.answeredAt === undefined).slice(0, 3);
    const shown = await Promise.all(
      stuck.map(async (r) => `${r.session} round ${r.round}:\n${await describeStuckRound(redisUrl, prefix, r)}`),
    );
    throw new Error(`${fault}: ${(e as Error).message}\n${shown.join('\n')}`);
  }
}
