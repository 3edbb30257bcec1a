import type { CallResult, NeutralTool } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import {
  formatRound,
  formatTools,
  resultContent,
  toAnthropicContent,
  toAnthropicTool,
  toOpenAiMessages,
  toOpenAiTool,
} from './format.js';

const tool: NeutralTool = {
  name: 'calculate',
  description: 'Evaluate an expression.',
  parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
};

const ok: CallResult = { id: 'c1', name: 'calculate', status: 'ok', output: { value: 5 }, durationMs: 3 };
const deduped: CallResult = { ...ok, id: 'c2', status: 'deduped', dedupedFrom: 'c1' };
const cached: CallResult = { ...ok, id: 'c3', status: 'cached' };
const refused: CallResult = {
  id: 'c4',
  name: 'read_files',
  status: 'refused',
  error: { code: 'refused', message: 'read_files is not loaded; fetch it with find_tools, then call run_tool' },
  durationMs: 0,
};
const schema: CallResult = {
  id: 'c5',
  name: 'calculate',
  status: 'schema',
  output: { tool, message: 'call again with these args' },
  durationMs: 0,
};
const timedOut: CallResult = {
  id: 'c6',
  name: 'run_command',
  status: 'error',
  error: { code: 'timeout', message: 'run_command took longer than 60000 ms' },
  durationMs: 60_000,
};

describe('tools views', () => {
  it('wraps a tool as an OpenAI function tool', () => {
    expect(toOpenAiTool(tool)).toEqual({
      type: 'function',
      function: { name: 'calculate', description: 'Evaluate an expression.', parameters: tool.parameters },
    });
  });

  it('renames parameters to input_schema for Anthropic', () => {
    expect(toAnthropicTool(tool)).toEqual({
      name: 'calculate',
      description: 'Evaluate an expression.',
      input_schema: tool.parameters,
    });
  });

  it('gives an Anthropic input_schema type object when the definition has no type', () => {
    expect(toAnthropicTool({ ...tool, parameters: {} }).input_schema).toEqual({ type: 'object' });
  });

  it('keeps only name, description and parameters in the neutral shape', () => {
    const extra = { ...tool, concurrency: 'concurrent' } as NeutralTool;
    expect(formatTools([extra], 'neutral')).toEqual([tool]);
  });

  it('maps every tool of the array in order', () => {
    const other = { ...tool, name: 'other' };
    expect(formatTools([tool, other], 'openai').map((t) => ('function' in t ? t.function.name : ''))).toEqual([
      'calculate',
      'other',
    ]);
  });
});

describe('result content', () => {
  it('is the JSON output for ok, deduped and cached', () => {
    for (const r of [ok, deduped, cached]) expect(resultContent(r)).toBe('{"value":5}');
  });

  it('is the JSON output for schema, which carries the definition the model must read', () => {
    expect(JSON.parse(resultContent(schema))).toEqual(schema.output);
  });

  it('is the error message for statuses that carry an error', () => {
    expect(resultContent(refused)).toBe(refused.error?.message);
    expect(resultContent(timedOut)).toBe('run_command took longer than 60000 ms');
  });

  it('is the JSON null when an ok result has no output', () => {
    expect(resultContent({ id: 'x', name: 't', status: 'ok', durationMs: 0 })).toBe('null');
  });
});

describe('round views', () => {
  const results = [ok, deduped, cached, refused, schema, timedOut];

  it('answers each OpenAI tool call with a tool message, in call order', () => {
    const messages = toOpenAiMessages(results);
    expect(messages.map((m) => m.tool_call_id)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'c6']);
    expect(messages.every((m) => m.role === 'tool' && typeof m.content === 'string')).toBe(true);
  });

  it('sets is_error false only for ok, deduped and cached', () => {
    expect(toAnthropicContent(results).map((b) => b.is_error)).toEqual([false, false, false, true, true, true]);
  });

  it('answers each tool_use block with a tool_result block of string content', () => {
    const [first] = toAnthropicContent([ok]);
    expect(first).toEqual({ type: 'tool_result', tool_use_id: 'c1', content: '{"value":5}', is_error: false });
  });

  describe('when the round holds items that are not function calls', () => {
    const invalid = (id: string): CallResult => ({
      id,
      name: '',
      status: 'invalid',
      error: { code: 'invalid', message: `${id} is not a function call` },
      durationMs: 0,
    });
    const calls = [
      { type: 'text', text: 'Let me look.' },
      { id: 'c1', type: 'function', function: { name: 'calculate', arguments: '{}' } },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'custom_tool_call', call_id: 'cc1', name: 'grep', input: 'x' },
    ];
    const response = { round: 'rnd_2', results: [invalid('call-0'), ok, invalid('rs_1'), invalid('cc1')] };

    it('answers no text block or reasoning item in a view, but keeps their results', () => {
      const anthropic = formatRound(response, 'anthropic', calls);
      expect(anthropic.results).toHaveLength(4);
      expect(anthropic.content?.map((b) => b.tool_use_id)).toEqual(['c1', 'cc1']);
      expect(formatRound(response, 'openai', calls).messages?.map((m) => m.tool_call_id)).toEqual(['c1', 'cc1']);
    });

    it('answers a Responses custom tool call with a custom_tool_call_output item', () => {
      expect(formatRound(response, 'openai-responses', calls).items).toEqual([
        { type: 'function_call_output', call_id: 'c1', output: '{"value":5}' },
        { type: 'custom_tool_call_output', call_id: 'cc1', output: 'cc1 is not a function call' },
      ]);
    });
  });

  it('adds messages for openai and content for anthropic beside the neutral results', () => {
    const response = { round: 'rnd_1', results };
    expect(formatRound(response, 'neutral')).toEqual(response);
    const openai = formatRound(response, 'openai');
    expect(openai.results).toBe(results);
    expect(openai.messages).toHaveLength(6);
    expect(openai.content).toBeUndefined();
    const anthropic = formatRound(response, 'anthropic');
    expect(anthropic.content).toHaveLength(6);
    expect(anthropic.messages).toBeUndefined();
  });
});
