import { callIdFor, type RedisClient, type RedisKeys, RUNNING_MARK, readOutcomes } from '@tool-dispatch/shared/redis';
import type { CallProgress, CallProgressState } from '../call-progress.js';

/**
 * (v1.3) The queue's calls as their outcome fields say (one HMGET of the round's outcome hash): `running`
 * once marked running (a concurrent call of the origin's own rounds is marked when its carrier is
 * added, so `running` covers the time it waits in the queue for a worker; a serial call is marked by
 * the worker that starts it), `done` once its outcome is recorded, undefined before either.
 */
export class QueueCallProgress implements CallProgress {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async progress(
    origin: string | undefined,
    round: string,
    callIndexes: readonly number[],
  ): Promise<(CallProgressState | undefined)[]> {
    if (origin === undefined || callIndexes.length === 0) return callIndexes.map(() => undefined);
    const callIds = callIndexes.map((i) => callIdFor(round, i));
    const values = await readOutcomes(this.redis, this.keys, origin, callIds);
    return values.map((v) => {
      if (v === null || v === undefined) return undefined;
      return v.startsWith(RUNNING_MARK) ? 'running' : 'done';
    });
  }
}
