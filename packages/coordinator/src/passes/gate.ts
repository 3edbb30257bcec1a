import { assertNever, type CallResult, FAILURES, type FailureKind, newId } from '@tool-dispatch/shared';
import type { AnswerOutcome, ConfirmDecision, ConfirmHub, PendingConfirmation } from '../confirm/confirm-hub.js';
import type { EventBus } from '../events/event-bus.js';
import type { PlannedCall, RoundContext, RoundHooks } from '../model.js';
import { RequestError } from '../request-error.js';
import type { Store } from '../store/store.js';

/** What the confirm gate reads and writes. */
export interface GateDeps {
  confirmations: ConfirmHub;
  events: EventBus;
  confirmTimeoutMs: number;
  hooks?: Pick<RoundHooks, 'confirmations' | 'confirmWait'> | undefined;
}

/**
 * DESIGN.md step 8: every confirmation of the round asked at once, each with its own id;
 * nothing runs until all are answered. A call not approved ends here (`denied`, or `cancelled`
 * when the run was). True when anybody was asked.
 */
export async function confirmGate(
  deps: GateDeps,
  ctx: RoundContext,
  planned: readonly PlannedCall[],
): Promise<boolean> {
  const asking = planned.filter((p) => p.decision.kind === 'run' && p.decision.needsConfirm);
  if (asking.length === 0) return false;
  const { session, run, round } = ctx.ref;
  const items: PendingConfirmation[] = asking.map((p) => ({
    confirmationId: newId('cf'),
    session,
    round,
    run,
    callId: p.call.id,
    name: p.name,
    args: p.args,
    createdAt: Date.now(),
  }));
  const decided = deps.confirmations.request(items, { timeoutMs: deps.confirmTimeoutMs, signal: ctx.signal });
  for (const item of items) {
    const { session: _s, createdAt: _c, ...data } = item;
    await deps.events.publish(session, 'confirm.requested', data);
  }
  deps.hooks?.confirmations?.(items.length);
  const settled = () => decided.finally(() => deps.hooks?.confirmations?.(-items.length));
  const confirmWait = deps.hooks?.confirmWait;
  const decisions = await (confirmWait ? confirmWait({ ...ctx.ref, asked: items }, settled) : settled());
  asking.forEach((p, i) => {
    const d = decisions[i];
    if (!d || d.approve) return;
    p.decision = { kind: 'done', result: notApproved(p, d, deps.confirmTimeoutMs) };
  });
  return true;
}

/** The result of a call nobody approved: who decided is the failure kind. */
function notApproved(p: PlannedCall, d: ConfirmDecision, timeoutMs: number): CallResult {
  let kind: FailureKind;
  let message: string;
  switch (d.by) {
    case 'person':
      kind = 'denied_by_user';
      message = `A person denied ${p.name}; it did not run. Do not retry it unchanged.`;
      break;
    case 'timeout':
      kind = 'confirm_timeout';
      message = `Nobody approved ${p.name} within ${timeoutMs} ms, so it did not run.`;
      break;
    case 'cancelled':
      kind = 'run_cancelled';
      message = `The run was cancelled while ${p.name} waited for approval; it did not run.`;
      break;
    default:
      return assertNever(d.by, 'confirmation decider');
  }
  const { status, code } = FAILURES[kind];
  return { id: p.call.id, name: p.name, status, error: { code, message }, durationMs: 0 };
}

/**
 * A person's answer to a pending confirmation (by confirmationId, or a callId only one has).
 * "Remember" with approve auto-approves the tool for the session and approves its other pending
 * confirmations of that tool.
 */
export async function answerConfirmation(
  deps: { confirmations: ConfirmHub; store: Pick<Store, 'addAutoApprove'> },
  session: string,
  idOrCallId: string,
  decision: { approve: boolean; remember: boolean },
): Promise<AnswerOutcome> {
  const out = await deps.confirmations.answer(session, idOrCallId, decision);
  if (out.kind !== 'answered' || !(decision.approve && decision.remember)) return out;
  await deps.store.addAutoApprove(session, out.confirmation.name);
  for (const other of await deps.confirmations.pending(session)) {
    if (other.name === out.confirmation.name) await deps.confirmations.answer(session, other.confirmationId, decision);
  }
  return out;
}

/** An answer's outcome as the API sees it: the confirmation answered, or why nothing was (a RequestError). */
export function confirmationAnswered(out: AnswerOutcome, session: string, idOrCallId: string): PendingConfirmation {
  switch (out.kind) {
    case 'answered':
      return out.confirmation;
    case 'not_found':
      throw new RequestError('confirmation_not_found', `nothing is pending under ${idOrCallId} in session ${session}`);
    case 'ambiguous':
      throw new RequestError(
        'confirmation_ambiguous',
        `${out.count} pending confirmations have call id ${idOrCallId}; answer by confirmationId`,
      );
    default:
      return assertNever(out, 'confirmation answer');
  }
}
