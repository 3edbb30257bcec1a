import type { ExecOutcome } from '@tool-dispatch/shared';
import { OUTCOME_TTL_MS, outcomeSlot, parseOutcome, type RedisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import { type RedisClient, runScript } from '../../support/redis-client.js';
import { parseRecordVerdictReply, recordVerdictScript } from './lua/recordVerdict-1.lua.js';
import type { Pending } from './pending.js';

/**
 * The outcome a call is answered with when the safety net decided it (lookUpPending): its verdict
 * recorded under the call's outcome field first, or the outcome a worker recorded there before it
 * (recordVerdict: first write wins), so what the coordinator answers is what the field holds and a
 * late worker's report is refused. The one place the coordinator writes its own verdict to a
 * call's outcome: a change of how outcomes are stored changes this function and its script only.
 */
export async function standingOutcome(
  context: { redis: RedisClient; keys: RedisKeys },
  entry: Pick<Pending, 'origin' | 'callId'>,
  verdict: ExecOutcome,
): Promise<ExecOutcome> {
  const { key, field } = outcomeSlot(context.keys, entry.origin, entry.callId);
  const reply = await runScript(
    context.redis,
    recordVerdictScript,
    [key],
    [field, JSON.stringify(verdict), OUTCOME_TTL_MS],
  );
  return parseOutcome(tryParseJson(parseRecordVerdictReply(reply))) ?? verdict;
}
