import { type Approval, assertNever, type CallResult, FAILURES, type FailureKind, newId } from '@tool-dispatch/shared';
import type {
  AnswerOutcome,
  ConfirmAnswer,
  ConfirmDecision,
  ConfirmHub,
  GrantRequest,
  PendingConfirmation,
} from '../confirm/confirm-hub.js';
import type { EventBus } from '../events/event-bus.js';
import type { Grant, PlannedCall, RoundContext, RoundHooks } from '../model.js';
import { RequestError } from '../request-error.js';
import { argsHashOf, grantCovers, MAX_GRANTS_PER_SESSION } from '../rules/grants.js';
import type { Store } from '../store/store.js';

/** What the confirm gate reads and writes. */
export interface GateDeps {
  confirmations: ConfirmHub;
  store: Store;
  events: EventBus;
  confirmTimeoutMs: number;
  hooks?: Pick<RoundHooks, 'confirmations' | 'confirmWait' | 'grants'> | undefined;
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
  const asking = await approvedByGrants(deps, ctx, planned);
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
    if (!d) return;
    if (d.approve) p.decision = { kind: 'run', needsConfirm: true, approval: approvalOf(d) };
    else p.decision = { kind: 'done', result: notApproved(p, d, deps.confirmTimeoutMs) };
  });
  return true;
}

/**
 * v1.2 grants: a call a live grant covers is approved by it (its use counted, `grant.used`
 * announced) before anybody is asked. Returns the calls still to ask for.
 */
async function approvedByGrants(
  deps: GateDeps,
  ctx: RoundContext,
  planned: readonly PlannedCall[],
): Promise<PlannedCall[]> {
  const { session, run, round } = ctx.ref;
  const asking: PlannedCall[] = [];
  for (const p of planned) {
    if (p.decision.kind !== 'run' || !p.decision.needsConfirm) continue;
    const match = { tool: p.name, argsHash: argsHashOf(p.args), run, now: Date.now() };
    const grant = await deps.store.useGrant(session, match);
    if (!grant) {
      asking.push(p);
      continue;
    }
    const approval = { by: `grant:${grant.grantId}`, at: new Date(match.now).toISOString() };
    p.decision = { kind: 'run', needsConfirm: true, approval };
    const used = { grantId: grant.grantId, tool: p.name, round, run, callId: p.call.id, uses: grant.uses };
    await deps.events.publish(session, 'grant.used', used);
    deps.hooks?.grants?.('used');
  }
  return asking;
}

/** Who answered, as results say it (v1.2 `approval`). */
function approvalOf(d: ConfirmDecision): Approval {
  return { by: d.who ?? d.by, at: new Date(d.at ?? Date.now()).toISOString() };
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
  const details = d.by === 'person' ? { details: { approval: approvalOf(d) } } : {};
  return { id: p.call.id, name: p.name, status, error: { code, message, ...details }, durationMs: 0 };
}

/** What answering a confirmation reads and writes. */
export interface AnswerDeps {
  confirmations: ConfirmHub;
  store: Pick<Store, 'addGrant' | 'listGrants' | 'useGrant'>;
  events: EventBus;
  hooks?: Pick<RoundHooks, 'grants'> | undefined;
}

/**
 * A person's answer to a pending confirmation (by confirmationId, or a callId only one has).
 * An approval with `grant` (or `remember`: a tool grant without expiry, v1.2) keeps the grant in
 * the store, announces it, and approves the session's other pending confirmations it covers.
 */
export async function answerConfirmation(
  deps: AnswerDeps,
  session: string,
  idOrCallId: string,
  decision: ConfirmAnswer,
): Promise<AnswerOutcome & { grant?: Grant }> {
  const request = decision.approve
    ? (decision.grant ?? (decision.remember ? { scope: 'tool' as const } : undefined))
    : undefined;
  // Checked before the answer, so a refused grant leaves the confirmation pending.
  if (request && (await deps.store.listGrants(session)).length >= MAX_GRANTS_PER_SESSION)
    throw new RequestError(
      'too_many_grants',
      `session ${session} has ${MAX_GRANTS_PER_SESSION} grants; revoke one first`,
    );
  const out = await deps.confirmations.answer(session, idOrCallId, decision);
  if (out.kind !== 'answered' || !request) return out;
  const grant = grantFor(out.confirmation, request, decision.who ?? 'person');
  if (!(await deps.store.addGrant(session, grant))) return out;
  const { uses: _u, createdAt: _c, ...announced } = grant;
  await deps.events.publish(session, 'grant.created', announced);
  deps.hooks?.grants?.('created');
  await approveCovered(deps, session, grant);
  return { ...out, grant };
}

/** The grant an approval asks for, bound to the confirmation's tool (and args, and run). */
function grantFor(c: PendingConfirmation, request: GrantRequest, createdBy: string): Grant {
  const now = Date.now();
  return {
    grantId: newId('gr'),
    tool: c.name,
    scope: request.scope,
    ...(request.scope === 'args' ? { argsHash: argsHashOf(c.args) } : {}),
    ...(request.run ? { run: c.run } : {}),
    ...(request.ttlMs === undefined ? {} : { expiresAt: new Date(now + request.ttlMs).toISOString() }),
    createdBy,
    createdAt: new Date(now).toISOString(),
    uses: 0,
  };
}

/** The session's other pending confirmations a new grant covers are approved by it (each use counted). */
async function approveCovered(deps: AnswerDeps, session: string, grant: Grant): Promise<void> {
  for (const other of await deps.confirmations.pending(session)) {
    const match = { tool: other.name, argsHash: argsHashOf(other.args), run: other.run, now: Date.now() };
    if (!grantCovers(grant, match)) continue;
    const used = await deps.store.useGrant(session, match);
    if (!used) continue;
    const who = `grant:${used.grantId}`;
    const answered = await deps.confirmations.answer(session, other.confirmationId, {
      approve: true,
      remember: false,
      who,
    });
    if (answered.kind !== 'answered') continue;
    const data = {
      grantId: used.grantId,
      tool: other.name,
      round: other.round,
      run: other.run,
      callId: other.callId,
      uses: used.uses,
    };
    await deps.events.publish(session, 'grant.used', data);
    deps.hooks?.grants?.('used');
  }
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
