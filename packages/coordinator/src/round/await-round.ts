import type { RoundRef, RoundResponse } from '../model.js';
import { RequestError } from '../request-error.js';
import type { Store } from '../store/store.js';

const FIRST_POLL_MS = 20;
const LONGEST_POLL_MS = 250;
/** How often a waiting retry asks whether the round it waits for was orphaned (see RoundRecovery.adoptOrphan). */
const ORPHAN_CHECK_MS = 2_000;

/**
 * Waits for a round running elsewhere (a retry under its Idempotency-Key, or a round another
 * coordinator took over) and returns its answer once the store confirms it durable
 * (Store.confirmServed); a round its coordinator gave up on (failed) throws `round_failed`.
 */
export async function awaitRound(
  store: Pick<Store, 'getRound' | 'confirmServed'>,
  ref: RoundRef,
  signal?: AbortSignal,
  adoptOrphan?: (owner: string) => Promise<boolean>,
): Promise<RoundResponse> {
  let checkedAt = Date.now();
  for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 2, LONGEST_POLL_MS)) {
    const rec = await store.getRound(ref.session, ref.run, ref.round);
    if (rec?.state === 'done' && rec.response) {
      // Served only once the replicas hold it: an answer a failover then lost would differ from the next retry's.
      await store.confirmServed?.(ref);
      return rec.response;
    }
    if (rec?.state === 'failed') throw new RequestError('round_failed', rec.error ?? `round ${ref.round} failed`);
    // Never waited on for ever: a round its coordinator gave up is taken over by this retry.
    if (adoptOrphan && rec?.owner && Date.now() - checkedAt >= ORPHAN_CHECK_MS) {
      checkedAt = Date.now();
      await adoptOrphan(rec.owner).catch(() => false);
    }
    if (signal?.aborted) throw new RequestError('invalid_request', 'the request was aborted');
    await new Promise((r) => setTimeout(r, delay));
  }
}
