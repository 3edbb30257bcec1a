import type { ConfirmHub } from '../confirm/confirm-hub.js';
import type { CallProgress, CallProgressState } from '../executors/call-progress.js';
import type { InputHub } from '../inputs/input-hub.js';
import type { CallState, RoundCallState, RoundRef, RoundView } from '../model.js';
import { RequestError } from '../request-error.js';
import type { RoundRecord, Store } from '../store/store.js';
import type { RoundWaiters } from './round-waiters.js';

/** Longest `wait` of `GET .../rounds/{round}` (API.md: 0–60000 ms). */
export const MAX_ROUND_WAIT_MS = 60_000;

/** What a round's view is read from: all of it where any coordinator reads it (the store and the shared hubs). */
export interface RoundViewDeps {
  store: Pick<Store, 'getRound' | 'confirmServed'>;
  confirmations: Pick<ConfirmHub, 'pending'>;
  inputs: Pick<InputHub, 'pending'>;
  /** Where the executor's calls are; absent: a call not waiting for a person is `queued` until the round ends. */
  progress?: CallProgress | undefined;
  waiters: RoundWaiters;
}

export interface RoundViewOptions {
  /** Hold on until the round ends or this many ms pass (0: answer at once). */
  waitMs?: number;
  /** The client went away: stop waiting. */
  signal?: AbortSignal;
}

/**
 * (v1.3) A round as the store has it: its stored answer once done (the same every time, on any
 * coordinator), else each call's state; null for a round the session and run do not have (or
 * whose retention passed). With `waitMs`, waits for the round's commit (its `round.completed`
 * event) first. A round given up by its coordinator throws `round_failed`, as a retry would hear.
 */
export async function roundView(
  deps: RoundViewDeps,
  ref: RoundRef,
  options: RoundViewOptions = {},
): Promise<RoundView | null> {
  const waitMs = Math.min(Math.max(0, options.waitMs ?? 0), MAX_ROUND_WAIT_MS);
  const record =
    waitMs > 0 && !options.signal?.aborted
      ? await waitForEnd(deps, ref, waitMs, options.signal)
      : await read(deps, ref);
  if (!record) return null;
  if (record.state === 'failed') throw new RequestError('round_failed', record.error ?? `round ${ref.round} failed`);
  if (record.state === 'done' && record.response) {
    // Served only once the replicas hold it (TD_REDIS_REPLICA_ACKS), as a retry's answer is.
    await deps.store.confirmServed?.(ref);
    const items = record.callNames?.map((c) => c.item);
    return items?.some((t) => t !== undefined)
      ? { status: 'done', response: record.response, items }
      : { status: 'done', response: record.response };
  }
  return { status: 'running', round: ref.round, run: ref.run, calls: await callStates(deps, ref, record) };
}

function read(deps: RoundViewDeps, ref: RoundRef): Promise<RoundRecord | null> {
  return deps.store.getRound(ref.session, ref.run, ref.round);
}

/** Listens for the round's commit, then reads: the round as it is when it ended, or when the wait ran out. */
async function waitForEnd(deps: RoundViewDeps, ref: RoundRef, waitMs: number, signal?: AbortSignal) {
  const { ended, stop } = await deps.waiters.listen(ref);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const first = await read(deps, ref);
    if (first?.state !== 'running') return first;
    await Promise.race([
      ended,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
        onAbort = resolve;
        if (signal?.aborted) resolve();
        else signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    return await read(deps, ref);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    stop();
  }
}

/**
 * Each call's state, from what every coordinator can read: a pending confirmation of its round
 * naming its id (`waiting_for_approval`), a parked input at its index (`waiting_for_input`), the
 * executor's progress (`running`, `done`), else `queued`.
 */
async function callStates(deps: RoundViewDeps, ref: RoundRef, record: RoundRecord): Promise<RoundCallState[]> {
  const calls = record.callNames ?? [];
  const indexes = calls.map((_, i) => i);
  const [confirmations, inputs, progress] = await Promise.all([
    deps.confirmations.pending(ref.session),
    deps.inputs.pending(ref.session),
    deps.progress?.progress(record.origin ?? record.owner, ref.round, indexes) ?? Promise.resolve([]),
  ]);
  const asked = new Set(confirmations.filter((c) => c.round === ref.round && c.run === ref.run).map((c) => c.callId));
  const parked = new Set(inputs.filter((p) => p.round === ref.round && p.run === ref.run).map((p) => p.callIndex));
  return calls.map((call, i) => ({
    id: call.id,
    name: call.name,
    state: stateOf(asked.has(call.id), parked.has(i), progress[i]),
  }));
}

function stateOf(asked: boolean, parked: boolean, progress: CallProgressState | undefined): CallState {
  if (asked) return 'waiting_for_approval';
  if (parked) return 'waiting_for_input';
  return progress ?? 'queued';
}
