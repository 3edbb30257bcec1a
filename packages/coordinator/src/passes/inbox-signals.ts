import type { ConfirmHub, PendingConfirmation } from '../confirm/confirm-hub.js';
import type { InboxFeed } from '../inbox/inbox-feed.js';
import type { InputHub } from '../inputs/input-hub.js';
import type { InboxItem, ParkedInput } from '../model.js';

/** A pending confirmation as the inbox lists it; its wait ends `timeoutMs` (TD_CONFIRM_TIMEOUT_MS) after it was asked. */
export function confirmationItem(c: PendingConfirmation, timeoutMs: number, order: number): InboxItem {
  const { confirmationId, session, round, run, callId, name, args, createdAt } = c;
  const base = { session, round, run, callId, name, args, createdAt, order };
  return { id: confirmationId, type: 'confirmation', ...base, deadline: createdAt + timeoutMs };
}

/** A parked call or question as the inbox lists it. */
export function inputItem(i: ParkedInput): InboxItem {
  const { inputId, kind, session, round, run, callId, callIndex, name, args, createdAt, deadline } = i;
  const base = { session, round, run, callId, name, args, createdAt, order: callIndex };
  return { id: inputId, type: 'input', kind, ...base, deadline };
}

/** Announcing must never fail what it announces: the inbox re-reads the hubs when it reconnects. */
function announcer(feed: InboxFeed): (change: Parameters<InboxFeed['announce']>[0]) => void {
  return function announceQuietly(change) {
    feed.announce(change).catch(() => undefined);
  };
}

/**
 * The confirm hub, telling the inbox feed what it asks (when asked) and what stops waiting
 * (answered here, or the request decided: answered elsewhere, timed out, cancelled).
 */
export function announcingConfirmHub(inner: ConfirmHub, feed: InboxFeed, timeoutMs: number): ConfirmHub {
  const announce = announcer(feed);
  const gone = (items: readonly PendingConfirmation[]) => {
    for (const c of items) announce({ kind: 'gone', session: c.session, id: c.confirmationId });
  };
  return {
    request(items, options) {
      const decided = inner.request(items, options);
      items.forEach((c, order) => {
        announce({ kind: 'asked', session: c.session, item: confirmationItem(c, timeoutMs, order) });
      });
      return decided.finally(function confirmationsDecided() {
        gone(items);
      });
    },
    async answer(session, idOrCallId, decision) {
      const out = await inner.answer(session, idOrCallId, decision);
      if (out.kind === 'answered') gone([out.confirmation]);
      return out;
    },
    pending: (session) => inner.pending(session),
    close: () => inner.close(),
  };
}

/** The input hub, telling the inbox feed what it parks and what stops waiting (answered, settled, timed out, cancelled). */
export function announcingInputHub(inner: InputHub, feed: InboxFeed): InputHub {
  const announce = announcer(feed);
  const gone = (session: string, id: string) => announce({ kind: 'gone', session, id });
  return {
    get shared() {
      return inner.shared;
    },
    async park(input) {
      const out = await inner.park(input);
      if (out.kind === 'parked' && out.fresh)
        announce({ kind: 'asked', session: input.session, item: inputItem(out.input) });
      return out;
    },
    async wait(input, options) {
      const out = await inner.wait(input, options);
      if (out.by !== 'released') gone(input.session, input.inputId);
      return out;
    },
    async settle(session, inputIds, settlement) {
      const out = await inner.settle(session, inputIds, settlement);
      for (const id of inputIds) gone(session, id);
      return out;
    },
    find: (session, idOrCallId) => inner.find(session, idOrCallId),
    async answer(session, inputId, answer) {
      const out = await inner.answer(session, inputId, answer);
      if (out === 'answered') gone(session, inputId);
      return out;
    },
    pending: (session) => inner.pending(session),
    close: () => inner.close(),
  };
}

/** The hubs the engine uses: announcing on `feed` when there is one, else as given. */
export function announcedHubs(
  hubs: { confirmations: ConfirmHub; inputs: InputHub },
  feed: InboxFeed | undefined,
  confirmTimeoutMs: number,
): { confirmations: ConfirmHub; inputs: InputHub } {
  if (!feed) return hubs;
  return {
    confirmations: announcingConfirmHub(hubs.confirmations, feed, confirmTimeoutMs),
    inputs: announcingInputHub(hubs.inputs, feed),
  };
}

/** What waits in a session: its pending confirmations and parked calls, as the inbox lists them. */
export async function waitingItems(
  hubs: { confirmations: ConfirmHub; inputs: InputHub },
  session: string,
  confirmTimeoutMs: number,
): Promise<InboxItem[]> {
  const [confirmations, inputs] = await Promise.all([
    hubs.confirmations.pending(session),
    hubs.inputs.pending(session),
  ]);
  // The hub lists a session's confirmations oldest first, a round's in call order: the index keeps that order.
  return [...confirmations.map((c, i) => confirmationItem(c, confirmTimeoutMs, i)), ...inputs.map(inputItem)];
}
