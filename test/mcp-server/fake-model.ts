import { badRequest, isObject, type JsonReply, type Loopback, serveJson } from '../../examples/support/loopback.js';

// A fake OpenAI model server for agent loops whose tools come from tool-dispatch's `/mcp`: the
// client (the OpenAI Agents SDK, the AI SDK) lists the tools over MCP, sends them to this server,
// runs the calls it answers through `/mcp` and sends the outputs back. It serves both Chat
// Completions (`/v1/chat/completions`) and Responses (`/v1/responses`), stateless, and plays one
// script: turn 1 calls `calculate` (6*7) and, when asked to, `run_command` (a command that passes
// the confirm gate); turn 2, once every call is answered, says what came back. Like the real APIs
// it refuses a conversation with a call left unanswered, an answer to no call, or a tool it was
// not offered, so a client that did not get the tool from `/mcp` fails the loop.

export const MCP_QUESTION = 'What is 6*7? Use the calculator.';
export const MCP_MODEL = 'scripted-model';
/** The command turn 1 runs when the script has one: it prints a marker the final text looks for. */
export const CONFIRM_COMMAND = 'echo approved-through-the-api';

export interface FakeModel extends Loopback {
  /** Each request's tool names as offered, in order (a turn per request). */
  readonly offered: string[][];
}

export interface ScriptOptions {
  /** Turn 1 also calls `run_command` with CONFIRM_COMMAND (it waits at the confirm gate). */
  withCommand?: boolean;
}

type Answers = Map<string, string>;

export async function startFakeModel(options: ScriptOptions = {}): Promise<FakeModel> {
  const offered: string[][] = [];
  const server = await serveJson(function scriptedModel(path, body) {
    if (!isObject(body)) return badRequest('the body must be an object');
    const chat = path === '/v1/chat/completions';
    if (!chat && path !== '/v1/responses') return { status: 404, body: { error: { message: `no route ${path}` } } };
    const tools = toolNames(body.tools);
    offered.push(tools);
    const conversation = chat ? chatAnswers(body.messages) : responsesAnswers(body.input);
    if (typeof conversation === 'string') return badRequest(conversation);
    const wanted = ['calculate', ...(options.withCommand ? ['run_command'] : [])];
    const missing = wanted.find((t) => !tools.includes(t));
    if (missing) return badRequest(`the scripted model needs the tool ${missing}; offered: ${tools.join(', ')}`);
    if (conversation.size === 0) return chat ? chatCalls(wanted) : responsesCalls(wanted);
    const text = finalMcpText(conversation);
    return chat ? chatCompletion(text) : responsesMessage(text);
  });
  return { ...server, offered };
}

/** Turn 2's text, from the outputs as the client sent them back (whatever their shape). */
export function finalMcpText(answers: Answers): string {
  const calc = answers.get('call_calc') ?? '';
  const value = /\\?"value\\?"\s*:\s*(-?\d+(?:\.\d+)?)/.exec(calc)?.[1];
  const parts = [value ? `6*7 = ${value}, says the calculator.` : `The calculator did not answer: ${calc}`];
  const cmd = answers.get('call_cmd');
  if (cmd !== undefined)
    parts.push(
      cmd.includes('approved-through-the-api') && !/\bdenied\b/i.test(cmd)
        ? 'The command ran once approved.'
        : `The command did not run: ${cmd.slice(0, 200)}`,
    );
  return parts.join(' ');
}

function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(isObject).map((t) => {
    const fn = isObject(t.function) ? t.function : t; // chat: {type, function: {name}}; responses: {type, name}
    return String(fn.name);
  });
}

const CALLS: Record<string, { id: string; args: unknown }> = {
  calculate: { id: 'call_calc', args: { expression: '6*7' } },
  run_command: { id: 'call_cmd', args: { command: CONFIRM_COMMAND } },
};

/** A tool output in any of the shapes clients send (a string, content parts, JSON) as text. */
function asText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output))
    return output.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n');
  return JSON.stringify(output);
}

/** Chat Completions: the tool messages by call id, or what the real API would refuse. */
function chatAnswers(messages: unknown): Answers | string {
  if (!Array.isArray(messages)) return 'messages must be an array';
  const list = messages.filter(isObject);
  const asked = list.flatMap((m) =>
    Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject).map((c) => c.id) : [],
  );
  const answers: Answers = new Map();
  for (const m of list) if (m.role === 'tool') answers.set(String(m.tool_call_id), asText(m.content));
  return checkPairs(asked, answers);
}

/** Responses: the function_call_output items by call id, or what the real API would refuse. */
function responsesAnswers(input: unknown): Answers | string {
  if (!Array.isArray(input)) return 'input must be an array of items';
  const items = input.filter(isObject);
  const asked = items.flatMap((i) => (i.type === 'function_call' ? [i.call_id] : []));
  const answers: Answers = new Map();
  for (const i of items) if (i.type === 'function_call_output') answers.set(String(i.call_id), asText(i.output));
  return checkPairs(asked, answers);
}

function checkPairs(asked: unknown[], answers: Answers): Answers | string {
  const missing = asked.find((id) => !answers.has(String(id)));
  if (missing !== undefined) return `No tool output found for function call ${String(missing)}.`;
  const stray = [...answers.keys()].find((id) => !asked.includes(id));
  return stray === undefined ? answers : `No tool call found for function call output with call_id ${stray}.`;
}

let seq = 0;
function chatCalls(tools: string[]): JsonReply {
  const toolCalls = tools.map((name) => ({
    id: CALLS[name]?.id,
    type: 'function',
    function: { name, arguments: JSON.stringify(CALLS[name]?.args) },
  }));
  return chatReply({ role: 'assistant', content: null, refusal: null, tool_calls: toolCalls }, 'tool_calls');
}

function chatCompletion(text: string): JsonReply {
  return chatReply({ role: 'assistant', content: text, refusal: null }, 'stop');
}

function chatReply(message: unknown, finishReason: string): JsonReply {
  return {
    status: 200,
    body: {
      id: `chatcmpl-${++seq}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: MCP_MODEL,
      choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    },
  };
}

function responsesCalls(tools: string[]): JsonReply {
  return responsesReply(
    tools.map((name, n) => ({
      type: 'function_call',
      id: `fc_${n + 1}`,
      call_id: CALLS[name]?.id,
      name,
      arguments: JSON.stringify(CALLS[name]?.args),
      status: 'completed',
    })),
  );
}

function responsesMessage(text: string): JsonReply {
  return responsesReply([
    {
      type: 'message',
      id: `msg_${++seq}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text, annotations: [] }],
    },
  ]);
}

function responsesReply(output: unknown[]): JsonReply {
  return {
    status: 200,
    body: {
      id: `resp_${++seq}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      model: MCP_MODEL,
      status: 'completed',
      output,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 20,
      },
    },
  };
}
