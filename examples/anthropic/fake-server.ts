import { badRequest, isObject, type JsonReply, type Loopback, serveJson } from '../support/loopback.js';
import { CALC_ARGS, FIND_ARGS, finalText, MODEL } from '../support/script.js';

// A fake Anthropic Messages server (POST /v1/messages) playing the scripted model. Like the real
// API it refuses a user turn after tool_use blocks that does not answer each of them with a
// tool_result of its id, or that holds a tool_result answering no tool_use.

type Message = Record<string, unknown>;
const blocksOf = (m: Message | undefined): Message[] => (Array.isArray(m?.content) ? m.content.filter(isObject) : []);

export function startFakeMessages(): Promise<Loopback> {
  return serveJson(function messages(path, body) {
    if (path !== '/v1/messages') return { status: 404, body: { error: { message: `no route ${path}` } } };
    if (!isObject(body) || !Array.isArray(body.messages)) return badRequest('messages: Field required');
    const turns = body.messages.filter(isObject);
    const problem = turns.map((m, i) => unanswered(m, turns[i + 1])).find((p) => p !== undefined);
    if (problem) return badRequest(problem);
    const results = blocksOf(turns.at(-1)).filter((b) => b.type === 'tool_result');
    if (results.length === 0) return message(turnOneContent(), 'tool_use');
    const calc = results.find((b) => b.tool_use_id === 'toolu_calc');
    const text = finalText(typeof calc?.content === 'string' ? calc.content : undefined);
    return message([{ type: 'text', text, citations: null }], 'end_turn');
  });
}

/** The turn after an assistant turn must answer exactly its tool_use blocks. */
function unanswered(turn: Message, next: Message | undefined): string | undefined {
  if (turn.role !== 'assistant') return undefined;
  const uses = blocksOf(turn).flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
  const results = blocksOf(next).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
  const missing = next ? uses.find((id) => !results.includes(id)) : undefined;
  if (missing !== undefined) return `tool_use ids were found without tool_result blocks immediately after: ${missing}`;
  const stray = results.find((id) => !uses.includes(id));
  return stray === undefined ? undefined : `unexpected tool_use_id found in tool_result blocks: ${String(stray)}`;
}

function turnOneContent(): Message[] {
  const use = (id: string, name: string, input: unknown) => ({
    type: 'tool_use',
    id,
    name,
    input,
    caller: { type: 'direct' },
  });
  return [
    // A text block before the calls, as models write them: tool-dispatch answers it invalid in
    // `results` and gives it no tool_result.
    { type: 'text', text: 'I will look the calculator up and use it.', citations: null },
    use('toolu_find', 'find_tools', FIND_ARGS),
    use('toolu_calc', 'run_tool', CALC_ARGS),
  ];
}

let seq = 0;
function message(content: Message[], stopReason: 'tool_use' | 'end_turn'): JsonReply {
  return {
    status: 200,
    body: {
      id: `msg_${++seq}`,
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 10 },
    },
  };
}
