import type { ContentBlock, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionMessageToolCall, ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import type { ResponseInputItem, ResponseOutputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSchemas, type Harness, putSession, startHarness, uid } from './harness.js';

// Each SDK's own union arrays go into the typed client as they come (`pnpm typecheck` compiles
// this file under the repo's strict settings: no cast anywhere), and what comes back types as the
// SDK's request params. The server answers the items that are not function calls `invalid`.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function calcSession(provider: string) {
  const s = uid('s');
  await putSession(h, s, { provider });
  await fetchSchemas(h, s, ['calculate']);
  return s;
}

const calc = (expression: string) => JSON.stringify({ name: 'calculate', args: { expression } });
const statuses = (r: { results: Array<{ id: string; status: string }> }) => r.results.map((x) => `${x.id}:${x.status}`);

describe('ChatCompletionMessageToolCall[] (function and custom tool calls)', () => {
  it('runs the function calls, answers the custom one invalid, and gives a tool message for each', async () => {
    const s = await calcSession('openai');
    const toolCalls: ChatCompletionMessageToolCall[] = [
      { id: 'call_fn', type: 'function', function: { name: 'run_tool', arguments: calc('6*7') } },
      { id: 'call_custom', type: 'custom', custom: { name: 'calculate', input: '6*7' } },
    ];
    const r = await h.client.submitRound(s, uid('run'), toolCalls, { format: 'openai' });
    expect(statuses(r)).toEqual(['call_fn:ok', 'call_custom:invalid']);
    expect(r.results[1]?.error?.message).toMatch(/^"calculate" was called as an OpenAI custom tool call/);
    const back: ChatCompletionToolMessageParam[] = r.messages;
    expect(back.map((m) => m.tool_call_id)).toEqual(['call_fn', 'call_custom']);
  });
});

describe("Anthropic's ContentBlock[] (a whole assistant message's content)", () => {
  it('runs the tool_use blocks and answers only them with tool_result blocks', async () => {
    const s = await calcSession('anthropic');
    const content: ContentBlock[] = [
      { type: 'thinking', thinking: 'Use the calculator.', signature: 'sig' },
      { type: 'text', text: 'Let me compute that.', citations: null },
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'run_tool',
        input: JSON.parse(calc('2+3')),
        caller: { type: 'direct' },
      },
    ];
    const r = await h.client.submitRound(s, uid('run'), content, { format: 'anthropic' });
    expect(statuses(r)).toEqual(['call-0:invalid', 'call-1:invalid', 'toolu_1:ok']);
    expect(r.results[0]?.error?.message).toBe(
      'This is a thinking block (type "thinking"), not a function call: nothing was run.',
    );
    const back: ToolResultBlockParam[] = r.content;
    expect(back).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"value":5}', is_error: false }]);
  });
});

describe("OpenAI Responses' ResponseOutputItem[] (a whole response's output)", () => {
  it('runs function_call items by call_id and answers custom tool calls, not reasoning or message items', async () => {
    const s = await calcSession('openai');
    const output: ResponseOutputItem[] = [
      { type: 'reasoning', id: 'rs_1', summary: [] },
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Computing.', annotations: [] }],
      },
      { type: 'function_call', id: 'fc_1', call_id: 'call_fn', name: 'run_tool', arguments: calc('10/4') },
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_custom', name: 'calculate', input: '1' },
    ];
    const r = await h.client.submitRound(s, uid('run'), output, { format: 'openai-responses' });
    expect(statuses(r)).toEqual(['rs_1:invalid', 'msg_1:invalid', 'call_fn:ok', 'call_custom:invalid']);
    expect(r.results[0]?.error?.message).toMatch(/a reasoning item/);
    const back: ResponseInputItem[] = r.items;
    expect(back).toEqual([
      { type: 'function_call_output', call_id: 'call_fn', output: '{"value":2.5}' },
      { type: 'custom_tool_call_output', call_id: 'call_custom', output: r.results[3]?.error?.message },
    ]);
  });
});
