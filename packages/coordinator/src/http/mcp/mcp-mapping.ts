// The pure half of the MCP server (API.md "MCP server (additions of v1.2)"): tools/list entries
// from the session's tools array and the catalog, a tools/call result from the round's result,
// the ids a tools/call's `_meta` gives, and the elicitation requests that ask the client.
import { type CallResult, isValidId, type NeutralTool } from '@tool-dispatch/shared';
import type { CatalogView } from '../../dispatcher.js';
import type { ParkedInput } from '../../model.js';

/** `_meta` keys of the contract. */
export const META_RUN = 'tool-dispatch/run';
export const META_IDEMPOTENCY_KEY = 'tool-dispatch/idempotencyKey';
export const META_CALL_ID = 'tool-dispatch/callId';
export const META_RESULT = 'tool-dispatch/result';

/** Built-ins that change nothing: `readOnlyHint: true` (API.md). */
const READ_ONLY_BUILTINS = new Set([
  'read_files',
  'find_files',
  'find_tools',
  'fetch_page',
  'search_web',
  'calculate',
  'file_history',
  'error_history',
]);

/** An MCP tool as tools/list answers it. */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/**
 * A tool's annotations: an MCP server's tool keeps its server's; a built-in says `readOnlyHint`
 * where it changes nothing and `destructiveHint` where it passes the confirm gate.
 */
export function annotationsOf(entry: CatalogView | undefined): Record<string, unknown> | undefined {
  if (!entry) return undefined;
  if (entry.source === 'mcp') return entry.annotations ? { ...entry.annotations } : undefined;
  if (READ_ONLY_BUILTINS.has(entry.name) && entry.source === 'builtin')
    return { readOnlyHint: true, destructiveHint: false };
  if (entry.confirm) return { readOnlyHint: false, destructiveHint: true };
  return undefined;
}

/** The session's tools array as MCP tools (their schemas always objects, as MCP wants). */
export function mcpToolsOf(tools: readonly NeutralTool[], catalog: readonly CatalogView[]): McpTool[] {
  const byName = new Map(catalog.map((c) => [c.name, c]));
  return tools.map((t) => {
    const annotations = annotationsOf(byName.get(t.name));
    const schema = t.parameters.type === 'object' ? t.parameters : { type: 'object', ...t.parameters };
    return { name: t.name, description: t.description, inputSchema: schema, ...(annotations ? { annotations } : {}) };
  });
}

/** What a tools/call's `_meta` says: the run, the round's Idempotency-Key, the call's id. */
export interface CallIds {
  run: string;
  idempotencyKey?: string;
  callId: string;
}

/**
 * The run (`tool-dispatch/run` when an id, else the MCP session's id), the Idempotency-Key, and
 * the call id (`tool-dispatch/callId`, else `mcp-<key>`, else `fresh()`).
 */
export function callIdsOf(meta: Record<string, unknown> | undefined, mcpSession: string, fresh: () => string): CallIds {
  const run = isValidId(meta?.[META_RUN]) ? (meta?.[META_RUN] as string) : mcpSession;
  const key = isValidId(meta?.[META_IDEMPOTENCY_KEY]) ? (meta?.[META_IDEMPOTENCY_KEY] as string) : undefined;
  const given = isValidId(meta?.[META_CALL_ID]) ? (meta?.[META_CALL_ID] as string) : undefined;
  const fromKey = key !== undefined && isValidId(`mcp-${key}`) ? `mcp-${key}` : undefined;
  return { run, ...(key !== undefined ? { idempotencyKey: key } : {}), callId: given ?? fromKey ?? fresh() };
}

/** Statuses whose result is not an error (API.md). */
const SUCCESS = new Set(['ok', 'deduped', 'cached']);

type Content = Record<string, unknown>;

/** An MCP tool's output `{content, structuredContent?}`, as its server gave it, or undefined. */
function mcpOutputOf(output: unknown): { content: Content[]; structuredContent?: Content } | undefined {
  if (typeof output !== 'object' || output === null || Array.isArray(output)) return undefined;
  const o = output as Record<string, unknown>;
  if (!Array.isArray(o.content)) return undefined;
  const structured = o.structuredContent;
  const isObject = typeof structured === 'object' && structured !== null && !Array.isArray(structured);
  return { content: o.content as Content[], ...(isObject ? { structuredContent: structured as Content } : {}) };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of an error result: its message, and for `schema` the definition too. */
function errorText(result: CallResult): string {
  if (result.status === 'schema') return JSON.stringify(result.output);
  return result.error?.message ?? `the call ended ${result.status}`;
}

/**
 * A tools/call result from the round's result (API.md): `isError` false only for ok, deduped and
 * cached; an MCP tool's content and structuredContent untouched; any other output one text block
 * of its JSON, with structuredContent when it is an object; every other status one text block
 * with the error's message; `_meta["tool-dispatch/result"]` says how the call ended.
 */
export function callToolResultOf(result: CallResult, round: string, fromMcpServer: boolean): Record<string, unknown> {
  const meta: Record<string, unknown> = { id: result.id, status: result.status, round, durationMs: result.durationMs };
  if (result.error) meta.error = result.error;
  if (result.dedupedFrom !== undefined) meta.dedupedFrom = result.dedupedFrom;
  if (result.dedupedFromRound !== undefined) meta.dedupedFromRound = result.dedupedFromRound;
  const _meta = { [META_RESULT]: meta };
  if (!SUCCESS.has(result.status)) {
    return { content: [{ type: 'text', text: errorText(result) }], isError: true, _meta };
  }
  const mcp = fromMcpServer ? mcpOutputOf(result.output) : undefined;
  if (mcp) return { ...mcp, isError: false, _meta };
  const text = typeof result.output === 'string' ? result.output : JSON.stringify(result.output ?? null);
  return {
    content: [{ type: 'text', text }],
    ...(isPlainObject(result.output) ? { structuredContent: result.output } : {}),
    isError: false,
    _meta,
  };
}

/** The schema of a confirmation asked of the client (API.md, exactly). */
export const APPROVAL_SCHEMA = {
  type: 'object',
  properties: { approve: { type: 'boolean' }, remember: { type: 'boolean' } },
  required: ['approve'],
} as const;

/** The message of a confirmation asked of the client: the tool and its args. */
export function approvalMessage(name: string, args: unknown): string {
  return `tool-dispatch asks for approval: ${name} ${JSON.stringify(args ?? {})}. Approve?`;
}

/** `elicitation/create` params of a parked call (ask_user, an interactive tool, a server's own elicitation). */
export function inputElicitation(input: Pick<ParkedInput, 'kind' | 'name' | 'args'>): Record<string, unknown> {
  const a = input.args;
  if (input.kind === 'elicitation') {
    return { mode: 'form', message: String(a.message ?? ''), requestedSchema: a.requestedSchema ?? { type: 'object' } };
  }
  const choices = Array.isArray(a.choices) && a.choices.every((c) => typeof c === 'string') ? a.choices : undefined;
  const message =
    typeof a.question === 'string' ? a.question : `${input.name} asks for an answer: ${JSON.stringify(a)}`;
  return {
    mode: 'form',
    message,
    requestedSchema: {
      type: 'object',
      properties: { answer: { type: 'string', ...(choices ? { enum: choices } : {}) } },
      required: ['answer'],
    },
  };
}

/** The JSON-RPC id of an elicitation the dispatcher sends: what it answers, by kind and id. */
export function elicitationRequestId(kind: 'confirm' | 'input', id: string): string {
  return `td-${kind}:${id}`;
}

/**
 * (v1.3) The id of a 2025 task's elicitation (asked on a tasks/result stream): it names the task,
 * so the answer reaches the task's session whichever connection of its token reads the result.
 */
export function taskElicitationRequestId(taskId: string, kind: 'confirm' | 'input', id: string): string {
  return `td-task:${taskId}:${kind}:${id}`;
}

/** What an elicitation's JSON-RPC id answers (and of which task), or undefined for an id the dispatcher did not make. */
export function answeredBy(requestId: unknown): { kind: 'confirm' | 'input'; id: string; taskId?: string } | undefined {
  if (typeof requestId !== 'string') return undefined;
  const m = /^td-(?:task:([0-9a-f-]{36}):)?(confirm|input):(.+)$/.exec(requestId);
  if (!m || !isValidId(m[3])) return undefined;
  const target = { kind: m[2] as 'confirm' | 'input', id: m[3] as string };
  return m[1] === undefined ? target : { ...target, taskId: m[1] };
}

/** An elicitation's answer (`ElicitResult`) as a confirmation's decision: only accept with approve true approves. */
export function approvalOf(result: unknown): { approve: boolean; remember: boolean } {
  const r = isPlainObject(result) ? result : {};
  const content = isPlainObject(r.content) ? r.content : {};
  const approve = r.action === 'accept' && content.approve === true;
  return { approve, remember: approve && content.remember === true };
}

/** An elicitation's answer as a parked call's answer (API.md "Questions through the client"). */
export function inputAnswerOf(kind: ParkedInput['kind'], result: unknown): { output: unknown } | { error: string } {
  const r = isPlainObject(result) ? result : {};
  const action = r.action === 'accept' || r.action === 'decline' || r.action === 'cancel' ? r.action : 'cancel';
  if (kind === 'elicitation') {
    return { output: { action, ...(action === 'accept' && isPlainObject(r.content) ? { content: r.content } : {}) } };
  }
  if (action !== 'accept') return { error: `the person ${action === 'decline' ? 'declined' : 'cancelled'} to answer` };
  const content = isPlainObject(r.content) ? r.content : {};
  return { output: { answer: content.answer } };
}
