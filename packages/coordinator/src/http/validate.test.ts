import { MAX_CALLS_PER_ROUND } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { HttpError } from './errors.js';
import {
  parseConfirmationBody,
  parseFormat,
  parseIdempotencyKey,
  parseInputBody,
  parseLastEventId,
  parseRoundBody,
  parseSessionBody,
  parseToolFilter,
  requireId,
} from './validate.js';

function refusal(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (e) {
    if (e instanceof HttpError) return e;
    throw e;
  }
  throw new Error('expected an HttpError');
}

describe('ids', () => {
  it('accepts API.md ids up to 128 characters', () => {
    expect(requireId('a'.repeat(128), 'id')).toBe('a'.repeat(128));
    expect(requireId('call_A1.b:c-d', 'id')).toBe('call_A1.b:c-d');
  });

  it('refuses spaces, a leading symbol, 129 characters and non-strings with 400 invalid_id', () => {
    for (const bad of ['has space', '-lead', 'a'.repeat(129), '', 7, null, undefined]) {
      const e = refusal(() => requireId(bad, 'the run id'));
      expect(e.statusCode).toBe(400);
      expect(e.code).toBe('invalid_id');
      expect(e.message).toContain('the run id');
    }
  });

  it('validates the Idempotency-Key header as an id when present', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey('key-1')).toBe('key-1');
    expect(refusal(() => parseIdempotencyKey('two words')).statusCode).toBe(400);
  });
});

describe('round body', () => {
  it('returns the calls untouched, in order', () => {
    const calls = [
      { id: 'a', name: 'x', args: {} },
      { id: 'b', type: 'function', function: { name: 'x', arguments: '{not json' } },
      { type: 'tool_use', id: 'c', name: 'x', input: 5 },
    ];
    expect(parseRoundBody({ calls })).toBe(calls);
  });

  it('refuses a body without a calls array', () => {
    for (const body of [undefined, null, [], 'x', {}, { calls: 'nope' }, { calls: {} }]) {
      expect(refusal(() => parseRoundBody(body)).statusCode).toBe(400);
    }
  });

  it('refuses more calls than MAX_CALLS_PER_ROUND, naming the limit', () => {
    const calls = Array.from({ length: MAX_CALLS_PER_ROUND + 1 }, (_, i) => ({ id: `c${i}`, name: 'x', args: {} }));
    const e = refusal(() => parseRoundBody({ calls }));
    expect(e.code).toBe('too_many_calls');
    expect(e.message).toContain(String(MAX_CALLS_PER_ROUND));
    expect(parseRoundBody({ calls: calls.slice(1) })).toHaveLength(MAX_CALLS_PER_ROUND);
  });

  it('refuses a call that is not an object or has no valid id, naming its index', () => {
    expect(refusal(() => parseRoundBody({ calls: [{ id: 'a' }, 'x'] })).message).toContain('calls[1]');
    expect(refusal(() => parseRoundBody({ calls: [{ id: 'bad id', name: 'x' }] })).message).toContain('calls[0].id');
    expect(refusal(() => parseRoundBody({ calls: [{ name: 'x', args: {} }] })).code).toBe('invalid_id');
  });

  it('lets an item that is not a function call come without an id (a text block), but checks one it has', () => {
    const calls = [
      { type: 'text', text: 'hi' },
      { type: 'thinking', thinking: '', signature: 's' },
    ];
    expect(parseRoundBody({ calls })).toBe(calls);
    expect(refusal(() => parseRoundBody({ calls: [{ type: 'reasoning', id: 'bad id' }] })).message).toContain(
      'calls[0].id',
    );
    const custom = { type: 'custom_tool_call', call_id: 'bad id', name: 'x', input: '' };
    expect(refusal(() => parseRoundBody({ calls: [custom] })).message).toContain('calls[0].call_id');
    expect(refusal(() => parseRoundBody({ calls: [{ type: 'function', function: {} }] })).code).toBe('invalid_id');
  });

  it('leaves names and args to the engine', () => {
    const calls = [{ id: 'a' }, { id: 'b', name: 5, args: [] }];
    expect(parseRoundBody({ calls })).toBe(calls);
  });
});

describe('session body', () => {
  it('reads provider, tenant, autoApprove and clientTools, ignoring unknown fields', () => {
    const input = parseSessionBody({
      provider: 'anthropic',
      tenant: 'acme',
      autoApprove: ['run_command'],
      clientTools: [{ name: 'ask_user', description: 'Ask.', parameters: { type: 'object' }, confirm: false }],
      extra: true,
    });
    expect(input).toEqual({
      provider: 'anthropic',
      tenant: 'acme',
      autoApprove: ['run_command'],
      clientTools: [{ name: 'ask_user', description: 'Ask.', parameters: { type: 'object' }, confirm: false }],
    });
    expect(parseSessionBody({ provider: 'openai', autoApprove: 'all' }).autoApprove).toBe('all');
  });

  it('refuses a missing provider, a bad tenant, a bad autoApprove and malformed client tools', () => {
    for (const body of [
      {},
      { provider: '' },
      { provider: 'openai', tenant: 'a b' },
      { provider: 'openai', autoApprove: 'some' },
      { provider: 'openai', autoApprove: [1] },
      { provider: 'openai', clientTools: {} },
      { provider: 'openai', clientTools: [{ name: 'x', description: 'd' }] },
      { provider: 'openai', clientTools: [{ name: 'x', description: 'd', parameters: { type: 'nope' } }] },
      { provider: 'openai', clientTools: [{ name: 'x', description: 'd', parameters: {}, concurrency: 'fast' }] },
      {
        provider: 'openai',
        clientTools: [
          { name: 'x', description: 'd', parameters: {} },
          { name: 'x', description: 'e', parameters: {} },
        ],
      },
    ]) {
      expect(refusal(() => parseSessionBody(body)).statusCode, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('queries and small bodies', () => {
  it('reads ?format=, neutral when absent', () => {
    expect(parseFormat({})).toBe('neutral');
    expect(parseFormat({ format: 'openai' })).toBe('openai');
    expect(parseFormat({ format: 'anthropic' })).toBe('anthropic');
    expect(refusal(() => parseFormat({ format: 'gemini' })).statusCode).toBe(400);
    expect(refusal(() => parseFormat({ format: ['openai', 'anthropic'] })).statusCode).toBe(400);
  });

  it('reads ?tool= of history', () => {
    expect(parseToolFilter({})).toBeUndefined();
    expect(parseToolFilter({ tool: 'calculate' })).toBe('calculate');
    expect(refusal(() => parseToolFilter({ tool: '' })).statusCode).toBe(400);
    expect(refusal(() => parseToolFilter({ tool: ['a', 'b'] })).statusCode).toBe(400);
  });

  it('takes Last-Event-ID from the header, else ?lastEventId=', () => {
    expect(parseLastEventId('12', { lastEventId: '3' })).toBe('12');
    expect(parseLastEventId(undefined, { lastEventId: '3' })).toBe('3');
    expect(parseLastEventId(undefined, {})).toBeUndefined();
    expect(refusal(() => parseLastEventId('x'.repeat(300), {})).statusCode).toBe(400);
  });

  it('reads a confirmation answer; remember defaults to false', () => {
    expect(parseConfirmationBody({ approve: true })).toEqual({ approve: true, remember: false });
    expect(parseConfirmationBody({ approve: false, remember: true })).toEqual({ approve: false, remember: true });
    for (const body of [undefined, {}, { approve: 'yes' }, { approve: true, remember: 1 }]) {
      expect(refusal(() => parseConfirmationBody(body)).statusCode).toBe(400);
    }
  });

  it('reads an answer to a parked call: any JSON output (null too), or an error message', () => {
    expect(parseInputBody({ output: 'blue' })).toEqual({ output: 'blue' });
    expect(parseInputBody({ output: null })).toEqual({ output: null });
    expect(parseInputBody({ output: { v: [1] }, extra: true })).toEqual({ output: { v: [1] } });
    expect(parseInputBody({ error: 'no idea' })).toEqual({ error: 'no idea' });
  });

  it('refuses an answer with neither or both fields, or an error that is not a message', () => {
    for (const body of [undefined, 'x', [], {}, { output: 1, error: 'y' }, { error: 5 }, { error: '' }]) {
      expect(refusal(() => parseInputBody(body)).statusCode).toBe(400);
    }
    expect(refusal(() => parseInputBody({})).message).toMatch(/neither/);
  });
});
