import type {
  Tool as AnthropicSdkTool,
  MessageParam,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness, uid } from './harness.js';

// No network and no model: the assistant turns are written by hand, exactly as the SDKs type
// them, and what the service answers must type-check as the SDKs' own request params.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const fnCall = (id: string, name: string, args: unknown): ChatCompletionMessageFunctionToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

describe('an OpenAI Chat Completions agent loop', () => {
  it('runs two rounds, feeding the tool messages back as ChatCompletionToolMessageParam', async () => {
    const s = uid('s');
    await h.client.putSession(s, { provider: 'openai' });
    const { tools: offered, context } = await h.client.tools(s, { format: 'openai' });
    const tools: ChatCompletionTool[] = offered;
    expect(tools.map((t) => (t.type === 'function' ? t.function.name : '')).sort()).toEqual(['find_tools', 'run_tool']);

    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: context },
      { role: 'user', content: 'What is 6*7?' },
    ];
    const run = uid('run');

    // Round 1: the model looks the calculator up.
    const calls1 = [fnCall('call_find', 'find_tools', { names: ['calculate'] })];
    const turn1: ChatCompletionAssistantMessageParam = { role: 'assistant', content: null, tool_calls: calls1 };
    messages.push(turn1);
    const r1 = await h.client.submitRound(s, run, calls1, { format: 'openai' });
    const back1: ChatCompletionToolMessageParam[] = r1.messages;
    messages.push(...back1);
    expect(JSON.parse(back1[0]?.content as string).tools[0].name).toBe('calculate');

    // Round 2: it calls the calculator through run_tool, plus one call with broken arguments.
    const calls2: ChatCompletionMessageFunctionToolCall[] = [
      fnCall('call_calc', 'run_tool', { name: 'calculate', args: { expression: '6*7' } }),
      { id: 'call_broken', type: 'function', function: { name: 'run_tool', arguments: '{"name": "calcul' } },
    ];
    const turn2: ChatCompletionAssistantMessageParam = { role: 'assistant', content: null, tool_calls: calls2 };
    messages.push(turn2);
    const r2 = await h.client.submitRound(s, run, calls2, { format: 'openai' });
    const back2: ChatCompletionToolMessageParam[] = r2.messages;
    messages.push(...back2);

    expect(JSON.parse(back2[0]?.content as string)).toEqual({ value: 42 });
    expect(r2.results[1]?.status).toBe('invalid');
    expect(back2[1]?.content).toBe(r2.results[1]?.error?.message);
    // The protocol's invariant: every tool call is answered by a tool message with its id.
    const asked = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const answered = messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
    expect(answered).toEqual(asked);
  });
});

describe('an Anthropic Messages agent loop', () => {
  it('runs two rounds, feeding tool_result blocks back as ToolResultBlockParam', async () => {
    const s = uid('s');
    await h.client.putSession(s, { provider: 'anthropic' });
    const { tools: offered } = await h.client.tools(s, { format: 'anthropic' });
    const tools: AnthropicSdkTool[] = offered;
    expect(tools.map((t) => t.name).sort()).toEqual(['find_tools', 'run_tool']);

    const messages: MessageParam[] = [{ role: 'user', content: 'What is 6*7?' }];
    const run = uid('run');

    const turn1: ToolUseBlockParam[] = [
      { type: 'tool_use', id: 'toolu_find', name: 'find_tools', input: { names: ['calculate'] } },
    ];
    messages.push({ role: 'assistant', content: turn1 });
    const r1 = await h.client.submitRound(s, run, turn1, { format: 'anthropic' });
    const back1: ToolResultBlockParam[] = r1.content;
    messages.push({ role: 'user', content: back1 });
    expect(back1[0]).toMatchObject({ tool_use_id: 'toolu_find', is_error: false });

    const turn2: ToolUseBlockParam[] = [
      {
        type: 'tool_use',
        id: 'toolu_calc',
        name: 'run_tool',
        input: { name: 'calculate', args: { expression: '6*7' } },
      },
      { type: 'tool_use', id: 'toolu_bad', name: 'run_tool', input: { name: 'calculate', args: { expression: 42 } } },
    ];
    messages.push({ role: 'assistant', content: turn2 });
    const r2 = await h.client.submitRound(s, run, turn2, { format: 'anthropic' });
    const back2: ToolResultBlockParam[] = r2.content;
    messages.push({ role: 'user', content: back2 });

    expect(back2[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_calc',
      content: '{"value":42}',
      is_error: false,
    });
    expect(back2[1]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_bad', is_error: true });
    expect(typeof back2[1]?.content).toBe('string');
    // Every tool_use block is answered by a tool_result block with its id, in order.
    const blocks = messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
    const uses = blocks.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
    const results = blocks.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
    expect(results).toEqual(uses);
  });
});
