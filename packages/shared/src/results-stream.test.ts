import { describe, expect, it } from 'vitest';
import type { ExecOutcome } from './execution.js';
import { failedJobVerdict, STALLED_REASON } from './queues.js';
import { askFields, outcomeFields, parseResultsEntry, RESULTS_FIELD } from './results-stream.js';

const ok: ExecOutcome = { status: 'ok', output: { x: 1 }, durationMs: 3, ranOn: 'w-1' };
const failed: ExecOutcome = { status: 'error', code: 'timeout', message: 'late', durationMs: 9 };

describe('the results stream: one encoder and parser for both sides', () => {
  it('reads back the outcomes of one entry in order, by call id', () => {
    const fields = outcomeFields([
      { callId: 'rnd_a-0', json: JSON.stringify(ok) },
      { callId: 'rnd_a-1', json: JSON.stringify(failed) },
    ]);
    expect(fields[0]).toBe(RESULTS_FIELD.call);
    expect(parseResultsEntry(fields)).toEqual([
      { kind: 'outcome', callId: 'rnd_a-0', outcome: ok },
      { kind: 'outcome', callId: 'rnd_a-1', outcome: failed },
    ]);
  });

  it('reads back a question', () => {
    const question = { n: 2, request: { kind: 'elicitation' as const, args: { message: 'name?' } } };
    expect(parseResultsEntry(askFields('rnd_a-0', question))).toEqual([{ kind: 'ask', callId: 'rnd_a-0', question }]);
  });

  it('skips what it does not understand: an outcome that does not parse, an unknown field, an outcome with no call', () => {
    const fields = [
      RESULTS_FIELD.outcome,
      JSON.stringify(ok),
      'other',
      'x',
      RESULTS_FIELD.call,
      'rnd_a-0',
      RESULTS_FIELD.outcome,
      '{"status":"maybe"}',
      ...outcomeFields([{ callId: 'rnd_a-1', json: JSON.stringify(ok) }]),
    ];
    expect(parseResultsEntry(fields)).toEqual([{ kind: 'outcome', callId: 'rnd_a-1', outcome: ok }]);
  });
});

describe('failedJobVerdict: what a job BullMQ failed means for each of its calls', () => {
  it('calls a stalled job a lost worker, saying whether the call was re-run', () => {
    expect(failedJobVerdict({ name: 'run_command', queue: 'serial' }, STALLED_REASON, 5)).toEqual({
      status: 'error',
      code: 'worker_lost',
      message: 'run_command: its worker died; the outcome is unknown and it was not re-run',
      durationMs: 5,
    });
    expect(failedJobVerdict({ name: 'read_files', queue: 'concurrent' }, STALLED_REASON, 5)).toMatchObject({
      code: 'worker_lost',
      message: 'read_files: its worker died; the outcome is unknown and it was retried at most once',
    });
  });

  it("calls any other failure the worker's, naming the reason", () => {
    expect(failedJobVerdict({ name: 'calculate', queue: 'concurrent' }, 'Missing lock', 5)).toMatchObject({
      code: 'handler_error',
      message: 'the worker could not finish the job: Missing lock',
    });
  });
});
