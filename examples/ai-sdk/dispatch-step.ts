import type { CallResult, NativeCall, TdClient } from '@tool-dispatch/client';
import type { JSONValue, ToolResultPart, ToolSet, TypedToolCall } from 'ai';

export interface DispatchStepOptions {
  td: TdClient;
  session: string;
  run: string;
  signal?: AbortSignal;
}

/**
 * Runs one AI SDK step's tool calls as one tool-dispatch round: a tool-result part for each, for
 * the next `{role: 'tool'}` message, and the round's results. Calls the SDK marked `invalid` (a tool it was not
 * given, input its schema refused) and provider-executed ones are left out: the SDK already
 * answered those itself (a tool-error in `response.messages`), and a second answer would confuse
 * the provider.
 */
export async function dispatchStep(
  toolCalls: ReadonlyArray<TypedToolCall<ToolSet>>,
  options: DispatchStepOptions,
): Promise<{ parts: ToolResultPart[]; results: CallResult[] }> {
  const mine = toolCalls.filter((call) => !call.invalid && !call.providerExecuted);
  if (mine.length === 0) return { parts: [], results: [] };
  const calls: NativeCall[] = mine.map((call) => ({
    id: call.toolCallId,
    name: call.toolName,
    // Not an object: tool-dispatch answers the call invalid, saying what it got.
    args: isRecord(call.input) ? call.input : JSON.stringify(call.input ?? null),
  }));
  const { results } = await options.td.submitRound(options.session, options.run, calls, {
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const parts = mine.map(
    (call, i): ToolResultPart => ({
      type: 'tool-result',
      toolCallId: call.toolCallId,
      // The name the model called (run_tool), not results[i].name (the tool run_tool named):
      // the SDK and the providers pair a result with its call by id and by this name.
      toolName: call.toolName,
      output: outputOf(results[i]),
    }),
  );
  return { parts, results };
}

/** ok, deduped and cached carry the tool's output; schema its definition, as an error to call again; the rest their message. */
function outputOf(result: CallResult | undefined): ToolResultPart['output'] {
  if (!result) return { type: 'error-text', value: 'tool-dispatch answered no result for this call' };
  switch (result.status) {
    case 'ok':
    case 'deduped':
    case 'cached':
      return { type: 'json', value: asJson(result.output) };
    case 'schema':
      return { type: 'error-json', value: asJson(result.output) };
    default:
      return { type: 'error-text', value: result.error?.message ?? result.status };
  }
}

/** An output that came over the wire as JSON, typed as the SDK's JSONValue (round-tripped, so it is one). */
function asJson(value: unknown): JSONValue {
  return JSON.parse(JSON.stringify(value ?? null));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
