import { OUTCOME_TTL_MS, type RedisClient, type RedisKeys, RUNNING_MARK, runScript } from '@tool-dispatch/shared/redis';
import { claimCallsScript, parseClaimCallsReply } from './lua/claimCalls-n.lua.js';
import { type StartCallReply, type StartCallsScriptReply, StartCallsStatus } from './lua/startCalls-n2n.lua.js';

/** Where one namespace's calls sit: its outcome hashes, and each call's hash (index into them) and field. */
export interface StartedSlots {
  readonly hashes: readonly string[];
  readonly at: readonly number[];
  readonly fields: readonly number[];
}

/**
 * A concurrent call whose outcome field holds the running mark of a job that does not exist is
 * taken over by this job (and run) instead of being left to that job. Such a mark is stale: the
 * coordinator marks a job's calls as carried by it in the same write as the job's add, and when
 * the add failed (its Redis primary away, "Command timed out") while the mark went through, no
 * job will ever run those calls; the round is resumed (or taken over) under a new job, whose start
 * check would otherwise find them "elsewhere" and leave them, unanswered until the coordinator's
 * safety net gave up on them. A job that vanished after it started a call (Redis lost it) is the
 * same to this check: the call, a read, runs once more, as DESIGN.md allows a concurrent call on a
 * worker's loss; the first outcome recorded stands. Serial calls never get here: a serial call's
 * job id is its own, so another job's mark is never a serial call's.
 *
 * The job is looked for in this job's queue (the coordinator puts a run's calls on one shard), by
 * its hash (`<prefix>:<queue>:<id>`); the field is claimed only if it still holds the stale mark.
 */
export async function claimStaleMarks(
  redis: RedisClient,
  keys: RedisKeys,
  slots: StartedSlots,
  got: readonly StartCallsScriptReply[],
  carrierId: string,
  queueName: string,
): Promise<StartCallReply[]> {
  const others = [...new Set(got.flatMap((r) => (typeof r === 'object' && 'elsewhere' in r ? [r.elsewhere] : [])))];
  const out = got.map(withoutJobId);
  if (others.length === 0) return out;
  // One EXISTS a job (a cluster puts each queue in its slot, so a call's hash and the job's are apart).
  const present = await Promise.all(others.map((id) => redis.exists(`${keys.prefix}:${queueName}:${id}`)));
  const gone = new Set(others.filter((_id, i) => present[i] === 0));
  const stale = got.flatMap((r, k) => (typeof r === 'object' && 'elsewhere' in r && gone.has(r.elsewhere) ? [k] : []));
  if (stale.length === 0) return out;
  const args: (string | number)[] = [RUNNING_MARK + carrierId, OUTCOME_TTL_MS];
  for (const k of stale) {
    const other = (got[k] as { elsewhere: string }).elsewhere;
    args.push(slots.at[k] as number, slots.fields[k] as number, RUNNING_MARK + other);
  }
  const claimed = parseClaimCallsReply(await runScript(redis, claimCallsScript, [...slots.hashes], args));
  stale.forEach((k, j) => {
    if (claimed[j] === true) out[k] = StartCallsStatus.Run;
  });
  return out;
}

/** A start as the rest of the worker reads it: another job's mark is "elsewhere", whichever job. */
export function withoutJobId(reply: StartCallsScriptReply): StartCallReply {
  return typeof reply === 'object' && 'elsewhere' in reply ? StartCallsStatus.Elsewhere : reply;
}
