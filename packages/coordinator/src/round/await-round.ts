import type { RoundRef, RoundResponse } from '../model.js';
import { RequestError } from '../request-error.js';
import type { Store } from '../store/store.js';

const FIRST_POLL_MS = 20;
const LONGEST_POLL_MS = 250;

/**
 * Waits for a round running elsewhere (a retry under its Idempotency-Key, or a round another
 * coordinator took over) and returns its answer; a round its coordinator gave up on (failed)
 * throws `round_failed`.
 */
export async function awaitRound(
  store: Pick<Store, 'getRound'>,
  ref: RoundRef,
  signal?: AbortSignal,
): Promise<RoundResponse> {
  for (let delay = FIRST_POLL_MS; ; delay = Math.min(delay * 2, LONGEST_POLL_MS)) {
    const rec = await store.getRound(ref.session, ref.run, ref.round);
    if (rec?.state === 'done' && rec.response) return rec.response;
    if (rec?.state === 'failed') throw new RequestError('round_failed', rec.error ?? `round ${ref.round} failed`);
    if (signal?.aborted) throw new RequestError('invalid_request', 'the request was aborted');
    await new Promise((r) => setTimeout(r, delay));
  }
}
