// RedisLimits' releases: the places and turns given back in one tick, per limit, in one script.
import { type RedisClient, runScript } from '../support/redis-client.js';
import { parseReleaseLimitsReply, releaseLimitsScript } from './lua/releaseLimits-4n.lua.js';
import { batchKey, type Group, keysOf } from './redis-layout.js';

/**
 * Gives back calls' places and turns, those of one tick at the same stages in one releaseLimits
 * (not awaited by the call), and tells `onFreed` of each limit that now has a free place and a
 * waiter. Until one release was answered (its script loaded), acquires wait behind the releases
 * in flight (`whenLoaded`): the first may meet NOSCRIPT and be sent again as EVAL, and an acquire
 * sent meanwhile would overtake it on the one connection.
 */
export class ReleaseBatches {
  private readonly gives = new Map<string, { group: Group; tickets: string[] }>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private loaded = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly onFreed: (base: string) => void,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Runs `send` after the releases still in flight while the release script may not be loaded (at once after that). */
  whenLoaded(send: () => void): void {
    if (this.loaded || this.inFlight.size === 0) send();
    else void Promise.allSettled([...this.inFlight]).then(send);
  }

  /** Gives back one call's places and turn at a group's stages, with the others given back in this tick (one script). */
  give(group: Group, ticket: string): void {
    const key = batchKey(group.bases, group.stages);
    const batch = this.gives.get(key);
    if (batch) {
      batch.tickets.push(ticket);
      return;
    }
    const fresh = { group, tickets: [ticket] };
    this.gives.set(key, fresh);
    queueMicrotask(() => {
      this.gives.delete(key);
      const args = [...group.stages.map((s) => s.concurrency), ...fresh.tickets];
      const sent = runScript(this.redis, releaseLimitsScript, group.bases.flatMap(keysOf), args);
      if (!this.loaded) this.trackFirst(sent);
      sent
        .then((reply) => {
          for (const i of parseReleaseLimitsReply(reply, group.stages.length))
            this.onFreed(group.bases[i - 1] as string);
        })
        .catch((e: unknown) => this.onError(e instanceof Error ? e : new Error(`limits release: ${String(e)}`)));
    });
  }

  private trackFirst(sent: Promise<unknown>): void {
    this.inFlight.add(sent);
    sent.then(
      () => {
        this.loaded = true;
        this.inFlight.clear();
      },
      () => this.inFlight.delete(sent),
    );
  }
}
