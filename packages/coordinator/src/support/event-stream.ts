// A session's event stream in Redis as its writers see it: the key, the MINID trim to the replay
// window and the TTL push-back. Shared by the event bus and the store's round scripts, which append
// a round's events in the same step as its begin and commit.

import { EVENT_REPLAY_MS } from '@tool-dispatch/shared';
import { DuePerKey, type RedisKeys } from '@tool-dispatch/shared/redis';

/** A stream lives this long past the replay window after its last TTL push (at most this often). */
const EXPIRE_SLACK_MS = 60_000;

/**
 * What appending to a session's event stream takes besides the events (for publishEvents-1.lua
 * and the round scripts that append their own events): the stream key, and as script arguments
 * the MINID of the replay window, the stream's TTL, and whether to push that TTL back. An
 * abandoned session's stream goes once nothing in it can be replayed: its TTL is pushed back to
 * replayMs + EXPIRE_SLACK_MS at most every EXPIRE_SLACK_MS (and set on a stream without one);
 * both shrink to the replay window when it is shorter.
 */
export class EventStreamWriter {
  /** When this process last pushed back each stream's TTL. */
  private readonly expiry: DuePerKey;
  /** EXPIRE_SLACK_MS, or the replay window when that is shorter (a short TD_SESSION_TTL_MS). */
  private readonly slackMs: number;

  constructor(
    private readonly keys: RedisKeys,
    private readonly replayMs: number = EVENT_REPLAY_MS,
  ) {
    this.slackMs = Math.min(EXPIRE_SLACK_MS, replayMs);
    this.expiry = new DuePerKey(this.slackMs);
  }

  /** `args` are MINID, TTL ms and "1"/"0" (refresh); call `done` once the script ran. */
  prepare(session: string): { key: string; args: [string, number, string]; done(): void } {
    const key = this.keys.events(session);
    const now = Date.now();
    const minId = String(Math.max(0, now - this.replayMs));
    const refresh = this.expiry.due(key, now);
    return {
      key,
      args: [minId, this.replayMs + this.slackMs, refresh ? '1' : '0'],
      done: () => {
        if (refresh) this.expiry.done(key, now);
      },
    };
  }
}

/**
 * Lua: `appendEvent` adds one event to a session's stream, trimmed (approximately) to MINID
 * `minId`; `keepEvents` sets the stream's TTL when `refresh` is "1" or it has none. Shared by
 * publishEvents and the round scripts that append their events themselves.
 */
export const APPEND_EVENTS_LUA = `
local function appendEvent(key, minId, name, data)
  redis.call('XADD', key, 'MINID', '~', minId, '*', 'name', name, 'data', data)
end
local function keepEvents(key, ttl, refresh)
  if refresh == '1' or redis.call('PTTL', key) < 0 then
    redis.call('PEXPIRE', key, ttl)
  end
end
`;
