import { badRequest, isObject, type JsonReply, type Loopback, serveJson } from '../support/loopback.js';
import { CALC_ARGS, FIND_ARGS, finalText } from '../support/script.js';

// A fake OpenAI Chat Completions server (POST /v1/chat/completions) playing the scripted model.
// Like the real API it refuses a conversation in which a tool call has no tool message answering it.

type Message = Record<string, unknown>;

/**
 * The item turn 1 adds to its function calls: a custom tool call (tool-dispatch answers it
 * invalid), or a function call of a tool that was not offered (the AI SDK marks it invalid itself).
 */
export type ExtraCall = 'custom' | 'unoffered';

export function startFakeChatCompletions(extra: ExtraCall = 'custom'): Promise<Loopback> {
  return serveJson(function chatCompletions(path, body) {
    if (path !== '/v1/chat/completions') return { status: 404, body: { error: { message: `no route ${path}` } } };
    if (!isObject(body) || !Array.isArray(body.messages)) return badRequest('messages must be an array');
    const messages = body.messages.filter(isObject);
    const problem = unansweredCall(messages);
    if (problem) return badRequest(problem);
    const answers = messages.filter((m) => m.role === 'tool');
    return answers.length === 0 ? completion(turnOneCalls(extra), 'tool_calls') : turnTwo(answers);
  });
}

/** Every assistant tool call must be answered by a tool message with its id before the next turn. */
function unansweredCall(messages: Message[]): string | undefined {
  const asked = messages.flatMap((m) => (Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : []));
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));
  const missing = asked.find((c) => !answered.has(c.id));
  if (missing)
    return `An assistant message with 'tool_calls' must be followed by tool messages; ${missing.id} has none`;
  const askedIds = new Set(asked.map((c) => c.id));
  const stray = [...answered].find((id) => !askedIds.has(id));
  return stray === undefined ? undefined : `tool message for ${String(stray)} answers no tool call`;
}

function turnOneCalls(extra: ExtraCall): unknown[] {
  const fn = (id: string, name: string, args: unknown) => ({
    id,
    type: 'function',
    function: { name, arguments: JSON.stringify(args) },
  });
  return [
    fn('call_find', 'find_tools', FIND_ARGS),
    fn('call_calc', 'run_tool', CALC_ARGS),
    extra === 'custom'
      ? // A custom (free-text) tool call: tool-dispatch answers it invalid, with a tool message.
        { id: 'call_custom', type: 'custom', custom: { name: 'calculate', input: '6*7' } }
      : fn('call_unoffered', 'read_files', { paths: ['README.md'] }),
  ];
}

function turnTwo(answers: Message[]): JsonReply {
  const calc = answers.find((m) => m.tool_call_id === 'call_calc');
  return completion(finalText(typeof calc?.content === 'string' ? calc.content : undefined), 'stop');
}

let seq = 0;
function completion(content: string | unknown[], finishReason: 'stop' | 'tool_calls'): JsonReply {
  const message =
    typeof content === 'string'
      ? { role: 'assistant', content, refusal: null }
      : { role: 'assistant', content: null, refusal: null, tool_calls: content };
  return {
    status: 200,
    body: {
      id: `chatcmpl-${++seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: 'scripted-model',
      choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    },
  };
}
