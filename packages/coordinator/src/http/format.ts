import { assertNever, type CallResult, isSuccess, type NeutralTool } from '@tool-dispatch/shared';
import type { RoundResponse } from '../model.js';
import { otherItemOf } from '../rules/normalize-call.js';

/** How a client wants tools and results shaped (`?format=`); neutral is API.md's own shape. */
export type WireFormat = 'neutral' | 'openai' | 'openai-responses' | 'anthropic';

/** An entry of OpenAI's `tools` array (Chat Completions). */
export interface OpenAiTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** An entry of Anthropic's `tools` array (Messages API), whose input_schema must be an object schema. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
  /** Anthropic's tool search: the API keeps the tool out of the prompt until a search returns a reference to it. */
  defer_loading?: true;
}

/** A reference to a tool a client-side search found; the Messages API expands it into the tool's definition. */
export interface AnthropicToolReference {
  type: 'tool_reference';
  tool_name: string;
}

/** An entry of the tools array of OpenAI's Responses API (flat: no `function` wrapper). */
export interface OpenAiResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What OpenAI's Responses API wants back for one `function_call` item. */
export interface OpenAiFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** What OpenAI's Responses API wants back for one `custom_tool_call` item. */
export interface OpenAiCustomToolCallOutput {
  type: 'custom_tool_call_output';
  call_id: string;
  output: string;
}

/** What OpenAI's Chat Completions wants back for one tool call. */
export interface OpenAiToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

/** What Anthropic's Messages API wants back for one tool_use block. */
export interface AnthropicToolResult {
  type: 'tool_result';
  tool_use_id: string;
  /** The text; with Anthropic's tool search, a find_tools result's references to the tools it found. */
  content: string | AnthropicToolReference[];
  is_error: boolean;
}

export type FormattedTool = NeutralTool | OpenAiTool | OpenAiResponsesTool | AnthropicTool;

export type FormattedRound = RoundResponse & {
  messages?: OpenAiToolMessage[];
  items?: Array<OpenAiFunctionCallOutput | OpenAiCustomToolCallOutput>;
  content?: AnthropicToolResult[];
};

export function toOpenAiTool(tool: NeutralTool): OpenAiTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** Args are always an object (DESIGN.md), so the schema says so even when a definition left it out. */
export function toAnthropicTool(tool: NeutralTool): AnthropicTool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.parameters, type: 'object' } };
}

/**
 * The tools array in the requested shape. `toolSearch` `anthropic`: every tool but find_tools is
 * marked `defer_loading` in the anthropic shape (API.md v1.2).
 */
export function formatTools(
  tools: readonly NeutralTool[],
  format: WireFormat,
  toolSearch?: 'anthropic',
): FormattedTool[] {
  if (format === 'anthropic' && toolSearch === 'anthropic')
    return tools.map((t) =>
      t.name === 'find_tools' ? toAnthropicTool(t) : { ...toAnthropicTool(t), defer_loading: true },
    );
  switch (format) {
    case 'openai':
      return tools.map(toOpenAiTool);
    case 'openai-responses':
      return tools.map(({ name, description, parameters }) => ({ type: 'function', name, description, parameters }));
    case 'anthropic':
      return tools.map(toAnthropicTool);
    case 'neutral':
      return tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
    default:
      return assertNever(format, 'wire format');
  }
}

/**
 * The text a model sees for a result (API.md): the JSON output for ok, deduped, cached and
 * schema; the error message for every status that carries one.
 */
export function resultContent(result: CallResult): string {
  if (!isSuccess(result.status) && result.error) return result.error.message || result.status;
  return JSON.stringify(result.output ?? null);
}

/** Anthropic's is_error: false only for ok, deduped and cached. */
export function isErrorForModel(result: CallResult): boolean {
  return !isSuccess(result.status);
}

/**
 * The results a format view answers, with their calls: every one but those of items whose API
 * wants no answer from the client (a text block, a reasoning item: `otherItemOf`). Their results
 * stay in `results`.
 */
function answered(results: readonly CallResult[], calls: readonly unknown[]): Array<[CallResult, unknown]> {
  return results.flatMap((r, i): Array<[CallResult, unknown]> => {
    const call = calls[i];
    return otherItemOf(call)?.answered === false ? [] : [[r, call]];
  });
}

export function toOpenAiMessages(results: readonly CallResult[], calls: readonly unknown[] = []): OpenAiToolMessage[] {
  return answered(results, calls).map(([r]) => ({ role: 'tool', tool_call_id: r.id, content: resultContent(r) }));
}

/** function_call_output items, and custom_tool_call_output for custom tool calls (answered `invalid`). */
export function toOpenAiResponsesItems(
  results: readonly CallResult[],
  calls: readonly unknown[] = [],
): Array<OpenAiFunctionCallOutput | OpenAiCustomToolCallOutput> {
  return answered(results, calls).map(([r, call]) => ({
    type: otherItemOf(call)?.type === 'custom_tool_call' ? 'custom_tool_call_output' : 'function_call_output',
    call_id: r.id,
    output: resultContent(r),
  }));
}

export function toAnthropicContent(
  results: readonly CallResult[],
  calls: readonly unknown[] = [],
  toolSearch?: 'anthropic',
): AnthropicToolResult[] {
  return answered(results, calls).map(([r]) => ({
    type: 'tool_result',
    tool_use_id: r.id,
    content: (toolSearch === 'anthropic' && toolReferences(r)) || resultContent(r),
    is_error: isErrorForModel(r),
  }));
}

/**
 * Anthropic's tool search (API.md v1.2): a find_tools result answered (ok, or deduped) as
 * references to the tools it found, which the API expands into their definitions; undefined
 * for every other result, and for a search that found nothing (the text says so instead).
 */
function toolReferences(r: CallResult): AnthropicToolReference[] | undefined {
  if (r.name !== 'find_tools' || !isSuccess(r.status)) return undefined;
  const tools = (r.output as { tools?: unknown } | undefined)?.tools;
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const names = tools.map((t) => (t as { name?: unknown })?.name).filter((n): n is string => typeof n === 'string');
  return names.length ? names.map((tool_name) => ({ type: 'tool_reference', tool_name })) : undefined;
}

/** A round's answer with the format's view added beside the neutral results (`calls`: the round's, as sent). */
export function formatRound(
  response: RoundResponse,
  format: WireFormat,
  calls: readonly unknown[] = [],
  toolSearch?: 'anthropic',
): FormattedRound {
  switch (format) {
    case 'openai':
      return { ...response, messages: toOpenAiMessages(response.results, calls) };
    case 'openai-responses':
      return { ...response, items: toOpenAiResponsesItems(response.results, calls) };
    case 'anthropic':
      return { ...response, content: toAnthropicContent(response.results, calls, toolSearch) };
    case 'neutral':
      return response;
    default:
      return assertNever(format, 'wire format');
  }
}
