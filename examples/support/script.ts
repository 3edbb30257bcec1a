import type { CallResult } from '@tool-dispatch/client';
import { isObject } from './loopback.js';

// The scripted model every fake server plays: turn 1 looks the calculator up and calls it in the
// same round (find_tools is answered before the round's other calls run), plus one item that is
// not a function call; turn 2, once every call is answered, says what the calculator answered.

export const QUESTION = 'What is 6*7? Use the calculator.';
export const MODEL = 'scripted-model';
export const FIND_ARGS = { names: ['calculate'] };
export const CALC_ARGS = { name: 'calculate', args: { expression: '6*7' } };

/** Turn 2's text, from the calculator's answer as the model was sent it (the tool message's content). */
export function finalText(answer: string | undefined): string {
  try {
    const value: unknown = JSON.parse(answer ?? '');
    if (isObject(value) && typeof value.value === 'number') return `6*7 = ${value.value}, says the calculator.`;
  } catch {
    // Not JSON: an error message, shown as it is.
  }
  return `The calculator did not answer: ${answer ?? 'nothing came back'}`;
}

/** One line per result: call id, tool (run_tool unwrapped), status, and its output or error. */
export function printResults(results: readonly CallResult[]): void {
  for (const r of results) {
    const detail = r.error ? r.error.message : JSON.stringify(r.output);
    const shown = detail.length > 160 ? `${detail.slice(0, 157)}...` : detail;
    console.log(`  ${r.id.padEnd(14)} ${(r.name || '-').padEnd(11)} ${r.status.padEnd(8)} ${shown}`);
  }
}
