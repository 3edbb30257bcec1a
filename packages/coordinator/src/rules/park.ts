import {
  assertNever,
  type CallResult,
  elicitationAnswerProblem,
  FAILURES,
  type FailureKind,
  type InputReply,
  MAX_OUTPUT_BYTES,
  type ToolSpec,
} from '@tool-dispatch/shared';
import type { CallParkKind, InputAnswer, InputSettlement, ParkedInput, PlannedCall, RoundRef } from '../model.js';

/** The built-in interactive tool whose answer is checked against its `choices` and given as `{answer}`. */
export const ASK_USER = 'ask_user';

/**
 * DESIGN.md pass 2 "Parked calls": who answers a tool's calls instead of a worker. An interactive
 * tool (ask_user, or a definition with `interactive: true`, a client tool's too) is answered by
 * a person; any other client tool by the agent backend's client. Undefined: a worker runs it.
 */
export function parkKindOf(spec: Pick<ToolSpec, 'kind' | 'interactive'> | undefined): CallParkKind | undefined {
  if (spec?.interactive) return 'interactive';
  if (spec?.kind === 'client') return 'client';
  return undefined;
}

/**
 * A parked call's inputId: deterministic per (round, call index), so a coordinator that takes
 * the round over parks the same input again and finds an answer posted meanwhile; round ids are
 * unique, so inputIds are unique across rounds. Matches API.md's id pattern.
 */
export function inputIdOf(round: string, callIndex: number): string {
  return `in_${round}_${callIndex}`;
}

/** The store entry of a call parked now, answered within `timeoutMs` (TD_INPUT_TIMEOUT_MS). */
export function parkedInputOf(
  p: PlannedCall,
  ref: RoundRef,
  at: { kind: CallParkKind; now: number; timeoutMs: number },
): ParkedInput {
  return {
    inputId: inputIdOf(ref.round, p.call.index),
    kind: at.kind,
    session: ref.session,
    round: ref.round,
    run: ref.run,
    callId: p.call.id,
    callIndex: p.call.index,
    name: p.name,
    args: p.args,
    createdAt: at.now,
    deadline: at.now + at.timeoutMs,
  };
}

/** A parked call as API.md shows it: `input.requested`'s data and each entry of `GET .../inputs`. */
export function inputView(i: ParkedInput): Record<string, unknown> {
  return { inputId: i.inputId, kind: i.kind, round: i.round, run: i.run, callId: i.callId, name: i.name, args: i.args };
}

/**
 * ask_user's output for a posted `output`: an object that carries `answer` is the tool's output
 * shape already and is taken as it is; anything else (a string, a number, a list, another
 * object) is the answer itself, given as `{answer}`.
 */
export function askUserOutput(output: unknown): Record<string, unknown> {
  if (typeof output === 'object' && output !== null && !Array.isArray(output) && 'answer' in output)
    return output as Record<string, unknown>;
  return { answer: output };
}

/** The output a parked call ends `ok` with, for the `output` posted. */
export function parkedOutput(name: string, output: unknown): unknown {
  return name === ASK_USER ? askUserOutput(output) : output;
}

/** Why a posted answer cannot be taken (an ask_user answer outside its `choices`): the call stays parked. */
export function answerProblem(
  input: Pick<ParkedInput, 'name' | 'args' | 'kind'>,
  answer: InputAnswer,
): string | undefined {
  if (input.kind === 'elicitation' && 'output' in answer) {
    const problem = elicitationAnswerProblem(answer.output);
    return problem ? `${problem}. The question stays open.` : undefined;
  }
  if (input.name !== ASK_USER || !('output' in answer)) return undefined;
  const choices = input.args.choices;
  if (!Array.isArray(choices)) return undefined;
  const given = askUserOutput(answer.output).answer;
  if (typeof given === 'string' && choices.includes(given)) return undefined;
  return `ask_user asked for one of ${JSON.stringify(choices)}; got ${JSON.stringify(given) ?? 'nothing'}. The question stays open: answer with one of the choices.`;
}

/** The status a posted answer gives its call: `ok` for an output within MAX_OUTPUT_BYTES; an error, or a larger output, ends it `error`. */
export function answeredStatus(answer: InputAnswer): 'ok' | 'error' {
  return 'output' in answer && postedBytes(answer.output) <= MAX_OUTPUT_BYTES ? 'ok' : 'error';
}

const postedBytes = (output: unknown) => Buffer.byteLength(JSON.stringify(output) ?? 'null');

/** The result a parked call ends with: the one mapping from each way it can end (API.md "Parked calls"). */
export function parkedResult(
  p: Pick<PlannedCall, 'name'> & { call: { id: string } },
  settlement: InputSettlement,
  at: { kind: CallParkKind; durationMs: number; timeoutMs: number },
): CallResult {
  const base = { id: p.call.id, name: p.name, durationMs: Math.round(at.durationMs) };
  let kind: FailureKind;
  let message: string;
  switch (settlement.by) {
    case 'answer': {
      const a = settlement.answer;
      const ranOn = at.kind === 'interactive' ? 'person' : 'client';
      if (answeredStatus(a) === 'ok' && 'output' in a)
        return { ...base, status: 'ok', output: parkedOutput(p.name, a.output), ranOn };
      const bytes = 'output' in a ? postedBytes(a.output) : 0;
      kind = 'handler_threw';
      // As for a worker's output: past the limit, the call fails saying so (MAX_OUTPUT_BYTES).
      message =
        'error' in a ? a.error : `the posted output is ${bytes} bytes, over the limit of ${MAX_OUTPUT_BYTES} bytes`;
      break;
    }
    case 'timeout':
      kind = 'deadline';
      message =
        at.kind === 'interactive'
          ? `Nobody answered ${p.name} within ${at.timeoutMs} ms (TD_INPUT_TIMEOUT_MS), so it has no result.`
          : `The client did not answer ${p.name} within ${at.timeoutMs} ms (TD_INPUT_TIMEOUT_MS), so it has no result.`;
      break;
    case 'cancelled':
      kind = 'run_cancelled';
      message = `The run was cancelled while ${p.name} waited for its answer.`;
      break;
    case 'stopped':
      kind = 'run_cancelled';
      message = `The service stopped while ${p.name} waited for its answer; it was not answered. Ask again.`;
      break;
    default:
      return assertNever(settlement, 'input settlement');
  }
  const { status, code } = FAILURES[kind];
  return { ...base, status, error: { code, message } };
}

/** An elicitation's inputId: its call's, and its place among the call's questions (1, 2, …). */
export function elicitationIdOf(round: string, callIndex: number, n: number): string {
  return `${inputIdOf(round, callIndex)}_${n}`;
}

/** The store entry of a question a running call asks (an MCP server's elicitation), answered within `timeoutMs`. */
export function askedInputOf(
  p: PlannedCall,
  ref: RoundRef,
  at: { n: number; args: Record<string, unknown>; now: number; timeoutMs: number },
): ParkedInput {
  const call = parkedInputOf(p, ref, { kind: 'interactive', now: at.now, timeoutMs: at.timeoutMs });
  return { ...call, inputId: elicitationIdOf(ref.round, p.call.index, at.n), kind: 'elicitation', args: at.args };
}

/** What the running call hears of its question's settlement: the answer, or why there is none. */
export function askedReply(settlement: InputSettlement, timeoutMs: number): InputReply {
  switch (settlement.by) {
    case 'answer':
      return settlement.answer;
    case 'timeout':
      return { error: `nobody answered within ${timeoutMs} ms (TD_INPUT_TIMEOUT_MS)` };
    case 'cancelled':
      return { error: 'the run was cancelled while the question waited' };
    case 'stopped':
      return { error: 'the service stopped while the question waited' };
    default:
      return assertNever(settlement, 'input settlement');
  }
}
