import { tryParseJson } from '@tool-dispatch/shared/redis';
import type { RoundResponse, StoredPlanned } from '../model.js';
import { type RedisClient, runScript } from '../support/redis-client.js';
import { failRoundScript, parseFailRoundReply } from './lua/failRound-1.lua.js';
import { parseRetainRoundReply, retainRoundScript } from './lua/retainRound-1.lua.js';
import { parseSaveDecisionsReply, saveDecisionsScript } from './lua/saveDecisions-1.lua.js';
import { parseTakeRoundReply, TakeRoundStatus, takeRoundScript } from './lua/takeRound-1.lua.js';
import type { RoundRecord, TakenRound } from './store.js';

/** What RedisStore's round operations beside begin and commit use: the connection, and TD_ROUND_RETENTION_MS. */
export interface RoundsAt {
  redis: RedisClient;
  retentionMs: number;
}

/** Store.takeRound on the round's hash (`key`). */
export async function takeRound(at: RoundsAt, key: string, owner: string): Promise<TakenRound> {
  const reply = parseTakeRoundReply(await runScript(at.redis, takeRoundScript, [key], [owner]));
  if (reply.status === TakeRoundStatus.Done) return { kind: 'done' };
  if (reply.status === TakeRoundStatus.Missing) return { kind: 'missing' };
  const calls = tryParseJson(reply.calls);
  if (!Array.isArray(calls)) return { kind: 'missing' };
  const planned = tryParseJson(reply.planned);
  const taken: TakenRound = { kind: 'taken', calls, origin: reply.origin };
  if (Array.isArray(planned)) taken.planned = planned as StoredPlanned[];
  return taken;
}

/** Store.saveDecisions on the round's hash. */
export async function saveDecisions(
  at: RoundsAt,
  key: string,
  owner: string,
  planned: StoredPlanned[],
): Promise<boolean> {
  return parseSaveDecisionsReply(
    await runScript(at.redis, saveDecisionsScript, [key], [owner, JSON.stringify(planned)]),
  );
}

/** Store.failRound on the round's hash; a failed round is kept for the retention too. */
export async function failRound(at: RoundsAt, key: string, owner: string, error: string): Promise<boolean> {
  const failing = runScript(at.redis, failRoundScript, [key], [owner, error]);
  const retained = retainRound(at, key);
  const failed = parseFailRoundReply(await failing);
  if (!(await retained) && failed) await retainRound(at, key);
  return failed;
}

/**
 * (v1.3) TD_ROUND_RETENTION_MS from now for a round that ended (a no-op for one that runs), sent
 * right behind its failRound on the same connection (no round trip of its own; commitRound keeps
 * the round for the retention itself). Sent
 * again once the round has ended if it ran first (its script was loaded, the other one's was
 * not: ioredis sends that one again after NOSCRIPT). A failure only leaves the round its longer
 * TTL (the session's): never an error of the commit.
 */
export function retainRound(at: RoundsAt, key: string): Promise<boolean> {
  return runScript(at.redis, retainRoundScript, [key], [at.retentionMs])
    .then(parseRetainRoundReply)
    .catch(() => false);
}

/** A round's hash (HGETALL) as its record: null when it has none (never begun, or gone). */
export function roundRecordOf(hash: Record<string, string>): RoundRecord | null {
  const stored = tryParseJson(hash.record) as Omit<RoundRecord, 'state'> | undefined;
  if (!stored) return null;
  const response = tryParseJson(hash.response) as RoundResponse | undefined;
  const state = hash.state === 'done' || hash.state === 'failed' ? hash.state : 'running';
  const record: RoundRecord = { ...stored, state };
  if (response) record.response = response;
  if (state === 'failed') record.error = hash.error ?? 'the round failed';
  if (state === 'running' && hash.owner) record.owner = hash.owner;
  if (state === 'running' && hash.origin) record.origin = hash.origin;
  return record;
}
