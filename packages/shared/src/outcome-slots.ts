import { splitCallId } from './execution.js';
import type { RedisKeys } from './keys.js';

/**
 * (v1.3) Where a call's outcome lives: a field (its call index) of its round's outcome hash
 * (`RedisKeys.outcomes`, in the origin's `{c:<coordinator>}` slot). The field holds the call's
 * ExecOutcome JSON once recorded, or `RUNNING_MARK <job id>` while a job runs it.
 */
export interface OutcomeSlot {
  readonly key: string;
  readonly field: string;
}

/** The outcome slot of call `callId` (`callIdFor(round, i)`) in `origin`'s namespace. */
export function outcomeSlot(keys: RedisKeys, origin: string, callId: string): OutcomeSlot {
  const { round, callIndex } = splitCallId(callId);
  return { key: keys.outcomes(origin, round), field: String(callIndex) };
}

/**
 * Slots grouped for a script: `keys`, the distinct outcome hashes in first-seen order, and per
 * slot `at`, its hash's 1-based place in `keys` (how the scripts' ARGV name a call's hash).
 */
export function groupSlots(slots: readonly OutcomeSlot[]): { keys: string[]; at: number[] } {
  const keys: string[] = [];
  const place = new Map<string, number>();
  const at = slots.map((s) => {
    let p = place.get(s.key);
    if (p === undefined) {
      keys.push(s.key);
      p = keys.length;
      place.set(s.key, p);
    }
    return p;
  });
  return { keys, at };
}

/** What `readOutcomes` needs of a client: HMGET. */
export interface OutcomeReader {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
}

/**
 * Reads calls' outcome slots (one HMGET per round hash): per call, the outcome JSON, a running
 * mark, or null when neither was written. The calls must share one namespace (a Cluster slot).
 */
export async function readOutcomes(
  redis: OutcomeReader,
  keys: RedisKeys,
  origin: string,
  callIds: readonly string[],
): Promise<(string | null)[]> {
  const slots = callIds.map((id) => outcomeSlot(keys, origin, id));
  const { keys: hashes, at } = groupSlots(slots);
  const byHash = await Promise.all(
    hashes.map((hash, h) => redis.hmget(hash, ...slots.filter((_s, i) => at[i] === h + 1).map((s) => s.field))),
  );
  const next = hashes.map(() => 0);
  return slots.map((_s, i) => {
    const h = (at[i] as number) - 1;
    const k = next[h] as number;
    next[h] = k + 1;
    return (byHash[h] as (string | null)[])[k] ?? null;
  });
}

/**
 * Lua, included by the scripts that record outcomes (the worker's recordOutcomes and
 * reportOutcomes): `recordFirst(key, mark, ttl, fields, values)` writes each value into its
 * field of one outcome hash when the field is empty or holds `mark` (the reporting job's running
 * mark); a recorded outcome, or another job's mark, stands (a late or repeated report changes
 * nothing). Returns per field 1 when written now, else 0. One HMGET and one HSET for the hash; a
 * PEXPIRE (`ttl` ms) only when none of the fields held anything, the hash possibly new (every
 * writer of a hash gives it its TTL when it may have created it, so a hash that held one of the
 * fields has its TTL).
 *
 * `recordEach(keyBase, hashes, from, width, valueAt, count, mark, ttl)` does that for `count`
 * calls given as ARGV tuples of `width` from ARGV[from]: the call's hash (KEYS[keyBase + h], h
 * 1-based, at most `hashes`), its field, …, its value at offset `valueAt` (0-based); returns the
 * per-call 1 or 0 in the calls' order.
 */
export const RECORD_FIRST_LUA = `
local function recordFirst(key, mark, ttl, fields, values)
  local current = redis.call('HMGET', key, unpack(fields))
  local set, took, out, seen = {}, {}, {}, false
  for n = 1, #fields do
    local f, v = fields[n], current[n]
    if v then seen = true end
    if (not v or v == mark) and not took[f] then
      took[f] = true
      table.insert(set, f)
      table.insert(set, values[n])
      out[n] = 1
    else
      out[n] = 0
    end
  end
  if #set > 0 then
    redis.call('HSET', key, unpack(set))
    if not seen then redis.call('PEXPIRE', key, ttl) end
  end
  return out
end
local function recordEach(keyBase, hashes, from, width, valueAt, count, mark, ttl)
  local byHash = {}
  for j = 1, count do
    local h = tonumber(ARGV[from + width * (j - 1)])
    byHash[h] = byHash[h] or {}
    table.insert(byHash[h], j)
  end
  local out = {}
  for h = 1, hashes do
    local calls = byHash[h]
    if calls then
      local fields, values = {}, {}
      for n, j in ipairs(calls) do
        local b = from + width * (j - 1)
        fields[n] = ARGV[b + 1]
        values[n] = ARGV[b + valueAt]
      end
      local got = recordFirst(KEYS[keyBase + h], mark, ttl, fields, values)
      for n, j in ipairs(calls) do out[j] = got[n] end
    end
  end
  return out
end
`;
