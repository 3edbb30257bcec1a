import { createHash } from 'node:crypto';

/**
 * The idempotency key of one executed call (API.md "keys for side effects"): derived from the
 * call's session, run, round and index, so every retry of its round under the same
 * Idempotency-Key (which answers the first submission's round), a coordinator taking the round
 * over and a worker's redelivery all hand downstream the same key; any other call has another.
 * The coordinator (the result) and the worker (the header, MCP `_meta`, a handler's context)
 * each derive it from the job, so it never travels on its own.
 */
export function idempotencyKeyOf(call: { session: string; run: string; round: string; callIndex: number }): string {
  const digest = createHash('sha256')
    .update(`${call.session}\u0000${call.run}\u0000${call.round}\u0000${call.callIndex}`)
    .digest('base64url');
  return `td_${digest.slice(0, 32)}`;
}
