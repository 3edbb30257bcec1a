import { badRequest, isObject, type JsonReply, type Loopback, serveJson } from '../support/loopback.js';
import { finalText, MODEL } from '../support/script.js';

// A fake Anthropic Messages server playing a model that uses Anthropic's tool search over a
// tools array tool-dispatch gave with `toolSearch: "anthropic"`. Like the real API it checks the
// shapes: the tools all carry `defer_loading: true` but at least one (find_tools); a tool_result
// of the search holds `tool_reference` blocks, each naming a tool of the array; a tool_use of a
// deferred tool is only made once a reference to it came back; every tool_use is answered.

type Message = Record<string, unknown>;
const blocksOf = (m: Message | undefined): Message[] => (Array.isArray(m?.content) ? m.content.filter(isObject) : []);

export function startFakeToolSearch(): Promise<Loopback> {
  return serveJson(function messages(path, body) {
    if (path !== '/v1/messages') return { status: 404, body: { error: { message: `no route ${path}` } } };
    if (!isObject(body) || !Array.isArray(body.messages) || !Array.isArray(body.tools))
      return badRequest('messages and tools: Field required');
    const tools = body.tools.filter(isObject);
    const problem = toolsProblem(tools) ?? referencesProblem(body.messages.filter(isObject), tools);
    if (problem) return badRequest(problem);
    const last = blocksOf(body.messages.filter(isObject).at(-1));
    const search = last.find((b) => b.type === 'tool_result' && b.tool_use_id === 'toolu_search');
    const calc = last.find((b) => b.type === 'tool_result' && b.tool_use_id === 'toolu_calc');
    // Turn 1: search; turn 2 (the search found calculate): call it directly; turn 3: answer.
    if (!search && !calc)
      return message([use('toolu_search', 'find_tools', { query: 'evaluate an arithmetic expression' })]);
    if (search) {
      const found = referencesIn(search);
      if (!found.includes('calculate'))
        return badRequest(`the search did not find calculate: ${JSON.stringify(search.content)}`);
      return message([use('toolu_calc', 'calculate', { expression: '6*7' })]);
    }
    const text = finalText(typeof calc?.content === 'string' ? calc.content : undefined);
    return message([{ type: 'text', text, citations: null }], 'end_turn');
  });
}

/** The array of a tool-search request: defer_loading everywhere but on a tool left loaded (find_tools). */
function toolsProblem(tools: Message[]): string | undefined {
  const loaded = tools.filter((t) => t.defer_loading !== true).map((t) => t.name);
  if (loaded.length === 0) return 'At least one tool must have defer_loading=false';
  if (!loaded.includes('find_tools')) return `find_tools must be loaded; loaded: ${loaded.join(', ')}`;
  if (tools.some((t) => t.name === 'run_tool')) return 'run_tool is not offered with tool search';
  const bad = tools.find(
    (t) => typeof t.name !== 'string' || !isObject(t.input_schema) || t.input_schema.type !== 'object',
  );
  return bad ? `tool ${String(bad.name)} is not {name, description, input_schema}` : undefined;
}

/** Every tool_reference names a tool of the array; every tool_use is answered by a tool_result of its id. */
function referencesProblem(turns: Message[], tools: Message[]): string | undefined {
  const names = new Set(tools.map((t) => t.name));
  for (const [i, turn] of turns.entries()) {
    for (const b of blocksOf(turn)) {
      if (b.type !== 'tool_result') continue;
      for (const ref of referencesIn(b)) if (!names.has(ref)) return `tool_reference names ${ref}, not in tools`;
      if (
        Array.isArray(b.content) &&
        b.content.some((c) => !isObject(c) || c.type !== 'tool_reference' || typeof c.tool_name !== 'string')
      )
        return `tool_result content must be tool_reference blocks: ${JSON.stringify(b.content)}`;
    }
    if (turn.role !== 'assistant') continue;
    const answered = blocksOf(turns[i + 1]).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : []));
    const missing = blocksOf(turn).find((b) => b.type === 'tool_use' && turns[i + 1] && !answered.includes(b.id));
    if (missing) return `tool_use ids were found without tool_result blocks immediately after: ${String(missing.id)}`;
  }
  return undefined;
}

function referencesIn(result: Message): string[] {
  if (!Array.isArray(result.content)) return [];
  return result.content.filter(isObject).flatMap((c) => (c.type === 'tool_reference' ? [String(c.tool_name)] : []));
}

const use = (id: string, name: string, input: unknown) => ({
  type: 'tool_use',
  id,
  name,
  input,
  caller: { type: 'direct' },
});

let seq = 0;
function message(content: Message[], stopReason: 'tool_use' | 'end_turn' = 'tool_use'): JsonReply {
  return {
    status: 200,
    body: {
      id: `msg_search_${++seq}`,
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
