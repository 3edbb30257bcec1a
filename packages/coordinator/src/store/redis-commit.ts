// The arguments RedisStore's round scripts take beyond their fixed ones: each committed item's
// fields (commitRound-5n), and a run's places taken at the begin (beginRound-5) and given back at
// the commit.
import { DuePerKey, type RedisKeys } from '@tool-dispatch/shared/redis';
import { type RunPlacesAsk, type RunPlacesGive, resultOf } from '../model.js';
import { needsMeta } from './lua/dropDedupe-2.lua.js';
import type { CommitItem } from './store.js';

/**
 * The 7 script fields of each item (commitRound-5n.lua), adding each tool's history to `keys`.
 * Each result is serialised once: the script makes the history entry, the event and the round's
 * answer from it.
 */
export function commitItemArgs(
  k: RedisKeys,
  session: string,
  items: readonly CommitItem[],
  keys: string[],
): (string | number)[] {
  const toolKey = new Map<string, number>();
  const args: (string | number)[] = [];
  for (const item of items) {
    const tool = item.entry.name;
    let index = toolKey.get(tool);
    if (index === undefined) {
      keys.push(k.toolHistory(session, tool));
      index = keys.length; // Lua's KEYS are 1-based
      toolKey.set(tool, index);
    }
    const { round, run, at, paths } = item.entry;
    const d = item.dedupe;
    args.push(
      JSON.stringify(resultOf(item.entry)),
      // The script's tool.result event takes these fields up to "at" (so not the paths).
      `"round":${JSON.stringify(round)},"run":${JSON.stringify(run)},"at":${JSON.stringify(at)}${paths ? `,"paths":${JSON.stringify(paths)}` : ''}`,
      index,
      d ? d.key : '',
      d ? JSON.stringify(d) : '',
      d && needsMeta(d) ? JSON.stringify({ tool: d.tool, paths: d.paths ?? null }) : '',
      item.invalidations?.length ? JSON.stringify(item.invalidations) : '',
    );
  }
  return args;
}

/** beginRound's ARGV[13..16+k]: the run's places in all, the lease, the keys' TTL, k and the tickets (k = 0: none asked). */
export function beginPlacesArgs(places: RunPlacesAsk | undefined): (string | number)[] {
  if (!places) return [0, 0, 0, 0];
  return [places.concurrency, places.leaseMs, places.keyTtlMs, places.tickets.length, ...places.tickets];
}

/** commitRound's ARGV[9..9+k]: k, the places given back, and their tickets. */
export function givenBackArgs(give: RunPlacesGive | undefined): (string | number)[] {
  return give?.tickets.length ? [give.tickets.length, ...give.tickets] : [0];
}

/**
 * Whether this process pushes a session's sliding TTL back now (a script's "1"), at most once per
 * session every tenth of the TTL (a minute at most), else "0": the TTL a recent push set is still
 * nearly whole. Noted as done when asked (a push lost with its script is made good by the next).
 */
export class TtlPushBacks {
  private readonly due: DuePerKey;

  constructor(ttlMs: number) {
    this.due = new DuePerKey(Math.max(1, Math.min(60_000, Math.floor(ttlMs / 10))));
  }

  take(session: string): '1' | '0' {
    if (!this.due.due(session)) return '0';
    this.due.done(session);
    return '1';
  }
}
