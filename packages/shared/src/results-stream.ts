import type { ExecOutcome } from './execution.js';
import { type AskMessage, parseAskMessage, parseOutcome, tryParseJson } from './queues.js';

/**
 * A coordinator's results stream (RedisKeys.results): workers write, the coordinator that waits
 * reads. One entry is one or more `call id`, `outcome` pairs (outcomes known together), or one
 * question (`ask <call id>`, `question <AskMessage JSON>`). The field names, once for both sides
 * (and the worker's reportOutcomes script, which writes outcome entries itself).
 */
export const RESULTS_FIELD = {
  /** Names the call of the outcome that follows (`job` on the wire, from before calls and jobs had two names). */
  call: 'job',
  outcome: 'outcome',
  /** Names the call that asks the question that follows. */
  ask: 'ask',
  question: 'question',
} as const;

/** Results streams are capped (approximately) so a coordinator that never reads cannot grow one forever. */
export const RESULTS_STREAM_MAXLEN = 100_000;

/** One outcome as it goes on the stream: the call's id and the outcome's JSON. */
export interface EncodedOutcome {
  readonly callId: string;
  readonly json: string;
}

/** The fields of one outcome entry: each call's id and outcome, in order. */
export function outcomeFields(outcomes: readonly EncodedOutcome[]): string[] {
  return outcomes.flatMap((o) => [RESULTS_FIELD.call, o.callId, RESULTS_FIELD.outcome, o.json]);
}

/** The fields of one question entry. */
export function askFields(callId: string, question: AskMessage): string[] {
  return [RESULTS_FIELD.ask, callId, RESULTS_FIELD.question, JSON.stringify(question)];
}

/** What one results entry says, read back. */
export type ResultsMessage =
  | { kind: 'outcome'; callId: string; outcome: ExecOutcome }
  | { kind: 'ask'; callId: string; question: AskMessage };

/**
 * A results entry's messages, in order: its outcomes, or its question. Pairs that are not
 * understood (an unknown field, an outcome that does not parse) are skipped.
 */
export function parseResultsEntry(fields: readonly string[]): ResultsMessage[] {
  const messages: ResultsMessage[] = [];
  let callId: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === RESULTS_FIELD.ask && fields[i + 2] === RESULTS_FIELD.question) {
      const question = parseAskMessage(tryParseJson(fields[i + 3]));
      if (question) messages.push({ kind: 'ask', callId: fields[i + 1] as string, question });
      return messages;
    }
    if (fields[i] === RESULTS_FIELD.call) callId = fields[i + 1];
    else if (fields[i] === RESULTS_FIELD.outcome && callId !== undefined) {
      const outcome = parseOutcome(tryParseJson(fields[i + 1]));
      if (outcome) messages.push({ kind: 'outcome', callId, outcome });
      callId = undefined;
    }
  }
  return messages;
}
