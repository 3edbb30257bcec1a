import { badRequest, isObject, type JsonReply, type Loopback, serveJson } from '../support/loopback.js';
import { CALC_ARGS, FIND_ARGS, finalText, MODEL } from '../support/script.js';

// A fake OpenAI Responses server (POST /v1/responses) playing the scripted model, stateless like
// `store: false`: the client sends the whole input each turn. Like the real API it refuses an input
// in which a function_call or custom_tool_call has no output item with its call_id, or an output
// answers no call.

type Item = Record<string, unknown>;
const CALL_TYPES = new Set(['function_call', 'custom_tool_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output']);

export function startFakeResponses(): Promise<Loopback> {
  return serveJson(function responses(path, body) {
    if (path !== '/v1/responses') return { status: 404, body: { error: { message: `no route ${path}` } } };
    if (!isObject(body) || !Array.isArray(body.input)) return badRequest('input must be an array of items');
    const input = body.input.filter(isObject);
    const problem = unansweredCall(input);
    if (problem) return badRequest(problem);
    const outputs = input.filter((i) => OUTPUT_TYPES.has(String(i.type)));
    if (outputs.length === 0) return response(turnOneOutput());
    const calc = outputs.find((o) => o.call_id === 'call_calc');
    return response([messageItem(finalText(typeof calc?.output === 'string' ? calc.output : undefined))]);
  });
}

function unansweredCall(input: Item[]): string | undefined {
  const asked = new Set(input.flatMap((i) => (CALL_TYPES.has(String(i.type)) ? [i.call_id] : [])));
  const answered = new Set(input.flatMap((i) => (OUTPUT_TYPES.has(String(i.type)) ? [i.call_id] : [])));
  const missing = [...asked].find((id) => !answered.has(id));
  if (missing !== undefined) return `No tool output found for function call ${String(missing)}.`;
  const stray = [...answered].find((id) => !asked.has(id));
  return stray === undefined ? undefined : `No tool call found for function call output with call_id ${String(stray)}.`;
}

function turnOneOutput(): Item[] {
  const call = (n: number, callId: string, name: string, args: unknown) => ({
    type: 'function_call',
    id: `fc_${n}`,
    call_id: callId,
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  });
  return [
    // A reasoning item: tool-dispatch answers it invalid in `results` and sends nothing back for it.
    {
      type: 'reasoning',
      id: 'rs_1',
      summary: [{ type: 'summary_text', text: 'Look the calculator up, then call it.' }],
    },
    call(1, 'call_find', 'find_tools', FIND_ARGS),
    call(2, 'call_calc', 'run_tool', CALC_ARGS),
  ];
}

function messageItem(text: string): Item {
  return {
    type: 'message',
    id: 'msg_1',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

let seq = 0;
function response(output: Item[]): JsonReply {
  return {
    status: 200,
    body: {
      id: `resp_${++seq}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      model: MODEL,
      status: 'completed',
      output,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      usage: { input_tokens: 10, output_tokens: 10, total_tokens: 20 },
    },
  };
}
