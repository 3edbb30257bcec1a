import { assertNever, type CallResult, type InputRequester } from '@tool-dispatch/shared';
import type { EventBus } from '../events/event-bus.js';
import type { InputHub, InputWait } from '../inputs/input-hub.js';
import type {
  CallParkKind,
  InputAnswer,
  InputSettlement,
  ParkedInput,
  PlannedCall,
  RoundContext,
  RoundHooks,
} from '../model.js';
import { RequestError } from '../request-error.js';
import {
  answeredStatus,
  answerProblem,
  askedInputOf,
  askedReply,
  inputView,
  parkedInputOf,
  parkedResult,
} from '../rules/park.js';

/** What parking a call reads and writes. */
export interface ParkDeps {
  inputs: InputHub;
  events: EventBus;
  /** TD_INPUT_TIMEOUT_MS. */
  inputTimeoutMs: number;
  /** Aborted when this coordinator stops taking rounds and the drain's grace has passed: its waits let go. */
  parkRelease: AbortSignal;
  hooks?: Pick<RoundHooks, 'inputs'> | undefined;
}

/**
 * DESIGN.md pass 2 "Parked calls": instead of enqueuing the call, parks it in the store (the same
 * inputId for a coordinator that took the round over: an answer posted meanwhile is found),
 * says `input.requested` when it was parked now, and waits for its answer, deadline or
 * cancellation. A coordinator stopping lets go of the wait: with a shared store the call stays
 * parked and the round is left for another coordinator (RequestError `shutting_down`);
 * embedded, it ends `cancelled`, saying the service stopped.
 */
export async function parkCall(
  deps: ParkDeps,
  ctx: RoundContext,
  p: PlannedCall,
  kind: CallParkKind,
): Promise<CallResult> {
  const started = Date.now();
  const parked = await deps.inputs.park(
    parkedInputOf(p, ctx.ref, { kind, now: started, timeoutMs: deps.inputTimeoutMs }),
  );
  const settlement =
    parked.kind === 'settled' ? parked.settlement : await waitParked(deps, ctx, parked.input, parked.fresh);
  return parkedResult(p, settlement, { kind, durationMs: Date.now() - started, timeoutMs: deps.inputTimeoutMs });
}

/**
 * The question asker of a running call (an MCP server's elicitation, API.md): each question is
 * parked as an input of its kind under the call's inputId and its place (`_1`, `_2`…), said with
 * `input.requested`, and waited for like a parked call; the call hears the answer, or why none came.
 */
export function askDuringCall(deps: ParkDeps, ctx: RoundContext, p: PlannedCall): InputRequester {
  let asked = 0;
  return async function askPerson(request, signal) {
    asked += 1;
    const now = Date.now();
    const input = askedInputOf(p, ctx.ref, { n: asked, args: request.args, now, timeoutMs: deps.inputTimeoutMs });
    const parked = await deps.inputs.park({ ...input, kind: request.kind });
    const settlement =
      parked.kind === 'settled'
        ? parked.settlement
        : await waitParked(deps, { ...ctx, signal: AbortSignal.any([ctx.signal, signal]) }, parked.input, parked.fresh);
    return askedReply(settlement, deps.inputTimeoutMs);
  };
}

async function waitParked(
  deps: ParkDeps,
  ctx: RoundContext,
  input: ParkedInput,
  fresh: boolean,
): Promise<InputSettlement> {
  if (fresh) await deps.events.publish(input.session, 'input.requested', inputView(input));
  deps.hooks?.inputs?.(1);
  let waited: InputWait;
  try {
    waited = await deps.inputs.wait(input, { signal: ctx.signal, release: deps.parkRelease });
  } finally {
    deps.hooks?.inputs?.(-1);
  }
  if (waited.by !== 'released') return waited;
  if (deps.inputs.shared)
    throw new RequestError(
      'shutting_down',
      `the coordinator stopped while ${input.name} (call ${input.callId}) waited for its answer; it stays parked as ${input.inputId}: retry the round with its Idempotency-Key on another coordinator to get its results`,
    );
  const [held] = await deps.inputs.settle(input.session, [input.inputId], { by: 'stopped' });
  return held ?? { by: 'stopped' };
}

/** What answering a parked call found: answered (with the status its answer gives the call), or why not. */
export type AnswerInputOutcome =
  | { kind: 'answered'; input: ParkedInput; status: 'ok' | 'error' }
  | { kind: 'not_found' }
  | { kind: 'ambiguous'; count: number }
  /** The answer cannot be taken (an ask_user answer outside its choices): the call stays parked. */
  | { kind: 'refused'; problem: string };

/** `POST .../inputs/{id}`: the parked call (by inputId, or a callId only one has) settled with its answer. */
export async function answerInput(
  inputs: InputHub,
  session: string,
  idOrCallId: string,
  answer: InputAnswer,
): Promise<AnswerInputOutcome> {
  const found = await inputs.find(session, idOrCallId);
  if (found.kind !== 'found') return found;
  const problem = answerProblem(found.input, answer);
  if (problem) return { kind: 'refused', problem };
  if ((await inputs.answer(session, found.input.inputId, answer)) === 'not_found') return { kind: 'not_found' };
  // The status the answer gives the call, by the rule its result follows (parkedResult).
  return { kind: 'answered', input: found.input, status: answeredStatus(answer) };
}

/** An answer's outcome as the API sees it: `{inputId, status}`, or why nothing was answered (a RequestError). */
export function inputAnswered(
  out: AnswerInputOutcome,
  session: string,
  idOrCallId: string,
): { inputId: string; status: 'ok' | 'error' } {
  switch (out.kind) {
    case 'answered':
      return { inputId: out.input.inputId, status: out.status };
    case 'not_found':
      throw new RequestError(
        'input_not_found',
        `nothing is parked under ${idOrCallId} in session ${session} (answered already, timed out, cancelled, or never)`,
      );
    case 'ambiguous':
      throw new RequestError(
        'input_ambiguous',
        `${out.count} parked calls have call id ${idOrCallId}; answer by inputId`,
      );
    case 'refused':
      throw new RequestError('invalid_request', out.problem);
    default:
      return assertNever(out, 'input answer');
  }
}
