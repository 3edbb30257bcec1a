import { ID_PATTERN } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import type { InputSettlement, PlannedCall } from '../model.js';
import { Catalog, resolveSpec } from './catalog.js';
import { answerProblem, askUserOutput, inputIdOf, parkedInputOf, parkedResult, parkKindOf } from './park.js';

const def = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object' },
  ...extra,
});

describe('parkKindOf', () => {
  it('parks ask_user and any interactive definition for a person, a client tool for its client', () => {
    expect(parkKindOf(new Catalog().get('ask_user'))).toBe('interactive');
    expect(parkKindOf(resolveSpec(def('api_approve', { interactive: true }), 'user'))).toBe('interactive');
    expect(parkKindOf(resolveSpec(def('ui_pick'), 'client'))).toBe('client');
    expect(parkKindOf(resolveSpec(def('ui_ask', { interactive: true }), 'client'))).toBe('interactive');
  });

  it('parks nothing a worker runs, nor a call with no definition', () => {
    expect(parkKindOf(new Catalog().get('run_command'))).toBeUndefined();
    expect(parkKindOf(resolveSpec(def('api_x'), 'user'))).toBeUndefined();
    expect(parkKindOf(undefined)).toBeUndefined();
  });
});

describe('inputIdOf', () => {
  it('is the same for the same call of a round, another for each call and round, and a valid id', () => {
    expect(inputIdOf('rnd_abc', 2)).toBe(inputIdOf('rnd_abc', 2));
    expect(new Set([inputIdOf('rnd_a', 0), inputIdOf('rnd_a', 1), inputIdOf('rnd_b', 0)]).size).toBe(3);
    expect(inputIdOf('rnd_0123456789abcdef', 127)).toMatch(ID_PATTERN);
  });
});

const planned = {
  call: { id: 'c1', index: 3 },
  name: 'ask_user',
  args: { question: 'Colour?' },
} as unknown as PlannedCall;

describe('parkedInputOf', () => {
  it('keeps the call and its place, with its deadline TD_INPUT_TIMEOUT_MS after now', () => {
    const ref = { session: 's', run: 'r', round: 'rnd_1' };
    expect(parkedInputOf(planned, ref, { kind: 'interactive', now: 1_000, timeoutMs: 500 })).toEqual({
      inputId: 'in_rnd_1_3',
      kind: 'interactive',
      session: 's',
      round: 'rnd_1',
      run: 'r',
      callId: 'c1',
      callIndex: 3,
      name: 'ask_user',
      args: { question: 'Colour?' },
      createdAt: 1_000,
      deadline: 1_500,
    });
  });
});

describe('askUserOutput', () => {
  it('gives a posted string, number or list as {answer}', () => {
    expect(askUserOutput('blue')).toEqual({ answer: 'blue' });
    expect(askUserOutput(3)).toEqual({ answer: 3 });
    expect(askUserOutput(['a'])).toEqual({ answer: ['a'] });
    expect(askUserOutput(null)).toEqual({ answer: null });
  });

  it('takes an object carrying answer as the output itself, and wraps any other object', () => {
    expect(askUserOutput({ answer: 'blue', note: 'sure' })).toEqual({ answer: 'blue', note: 'sure' });
    expect(askUserOutput({ colour: 'blue' })).toEqual({ answer: { colour: 'blue' } });
  });
});

describe('answerProblem', () => {
  const withChoices = {
    name: 'ask_user',
    kind: 'interactive' as const,
    args: { question: 'Colour?', choices: ['red', 'blue'] },
  };

  it('takes an answer among ask_user’s choices, bare or as {answer}', () => {
    expect(answerProblem(withChoices, { output: 'blue' })).toBeUndefined();
    expect(answerProblem(withChoices, { output: { answer: 'red' } })).toBeUndefined();
  });

  it('refuses an answer outside the choices, saying which they are', () => {
    expect(answerProblem(withChoices, { output: 'green' })).toMatch(/\["red","blue"\].*"green"/);
    expect(answerProblem(withChoices, { output: 1 })).toBeDefined();
  });

  it('takes any answer without choices, any error, and anything for other tools', () => {
    expect(
      answerProblem({ name: 'ask_user', kind: 'interactive', args: { question: 'q' } }, { output: { any: 1 } }),
    ).toBeUndefined();
    expect(answerProblem(withChoices, { error: 'no idea' })).toBeUndefined();
    expect(
      answerProblem({ name: 'ui_pick', kind: 'client', args: { choices: ['x'] } }, { output: 'y' }),
    ).toBeUndefined();
  });

  it('takes an elicitation answer only as {action, content?}, content with accept alone', () => {
    const asked = { name: 'mcp__ev__ask', kind: 'elicitation' as const, args: { message: 'm' } };
    expect(answerProblem(asked, { output: { action: 'accept', content: { name: 'Ada' } } })).toBeUndefined();
    expect(answerProblem(asked, { output: { action: 'decline' } })).toBeUndefined();
    expect(answerProblem(asked, { error: 'no' })).toBeUndefined();
    expect(answerProblem(asked, { output: 'yes' })).toMatch(/action/);
    expect(answerProblem(asked, { output: { action: 'maybe' } })).toMatch(/"maybe"/);
    expect(answerProblem(asked, { output: { action: 'accept', content: [1] } })).toMatch(/content/);
    expect(answerProblem(asked, { output: { action: 'decline', content: {} } })).toMatch(/accept/);
  });
});

describe('parkedResult', () => {
  const at = { kind: 'interactive' as const, durationMs: 12.4, timeoutMs: 600 };
  const end = (s: InputSettlement, over = {}) => parkedResult(planned, s, { ...at, ...over });

  it('ends ok with the posted output (ask_user as {answer}; a client tool’s as posted)', () => {
    expect(end({ by: 'answer', answer: { output: 'blue' } })).toEqual({
      id: 'c1',
      name: 'ask_user',
      status: 'ok',
      output: { answer: 'blue' },
      durationMs: 12,
      ranOn: 'person',
    });
    const client = parkedResult(
      { ...planned, name: 'ui_pick' },
      { by: 'answer', answer: { output: { v: 1 } } },
      {
        ...at,
        kind: 'client',
      },
    );
    expect(client).toMatchObject({ status: 'ok', output: { v: 1 }, ranOn: 'client' });
  });

  it('ends error/handler_error for a posted output over MAX_OUTPUT_BYTES, as for a worker’s', () => {
    const big = parkedResult(
      { ...planned, name: 'ui_pick' },
      { by: 'answer', answer: { output: 'x'.repeat(3 * 1024 * 1024) } },
      at,
    );
    expect(big).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
    expect(big.error?.message).toMatch(/over the limit of 2097152 bytes/);
  });

  it('ends error/handler_error with the posted message for an error answer', () => {
    expect(end({ by: 'answer', answer: { error: 'no idea' } })).toMatchObject({
      status: 'error',
      error: { code: 'handler_error', message: 'no idea' },
    });
  });

  it('ends error/timeout, error/cancelled and (service stopped) error/cancelled, each saying why', () => {
    expect(end({ by: 'timeout' })).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    expect(end({ by: 'timeout' }).error?.message).toMatch(/within 600 ms/);
    expect(end({ by: 'timeout' }).error?.message).toMatch(/^Nobody answered ask_user/);
    // A client tool nobody answered: the client did not answer it (never "the client answered").
    const client = end({ by: 'timeout' }, { kind: 'client' }).error?.message;
    expect(client).toBe('The client did not answer ask_user within 600 ms (TD_INPUT_TIMEOUT_MS), so it has no result.');
    expect(end({ by: 'cancelled' })).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(end({ by: 'stopped' })).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(end({ by: 'stopped' }).error?.message).toMatch(/service stopped/);
  });
});
