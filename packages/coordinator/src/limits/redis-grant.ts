// The RedisLimits' own bookkeeping types: a call's grant, a tick's batch of asks, a wake-up message.

import type { LimitStage, LimitWait } from './limits.js';
import type { AcquireLimitsReply } from './lua/acquireLimits-5n.lua.js';
import type { Group } from './redis-layout.js';

/** One call's grant, from its first stage to its release. */
export interface Grant {
  ticket: string;
  groups: Group[];
  /** Stages held so far, counted across groups. */
  held: number;
  total: number;
  /** Where it waits now (a base), and since when. */
  waitingAt?: string | undefined;
  waitStart: number;
  /** When it got every stage (its hold time, at release). */
  grantedAt?: number;
  done: boolean;
  onWait?: ((wait: LimitWait) => void) | undefined;
  settle?: ((error?: unknown) => void) | undefined;
}

/** The calls of one tick asking for the same stages: one script. */
export interface TakeBatch {
  bases: string[];
  stages: LimitStage[];
  asks: { ticket: string; resolve: (r: AcquireLimitsReply) => void; reject: (e: unknown) => void }[];
}

export interface WakeMessage {
  base: string;
  from: string;
  /** (v1.3) A call started waiting at `base` (not a place freed): places taken at a begin there go back as their calls end. */
  waiting?: true;
}
