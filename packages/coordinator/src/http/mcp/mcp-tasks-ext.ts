// (v1.3) The MCP tasks extension `io.modelcontextprotocol/tasks` on protocol 2026-07-28 (API.md
// "MCP tasks"; modelcontextprotocol/ext-tasks, specification/draft/tasks.md). No SDK has it: its
// methods are ours. Server-directed: a tools/call of a client that declared the extension is
// answered `resultType: "task"` when it waits at the gate or for an answer, or runs past
// TD_MCP_TASK_AFTER_MS, once the task is stored; tasks/get (the result inlined once terminal),
// tasks/update (the input responses), tasks/cancel.
import { ProtocolError, type Server } from '@modelcontextprotocol/server';
import { isMcpToolName } from '@tool-dispatch/shared';
import type { DispatchEvent } from '../../events/event-bus.js';
import { McpCallError } from './mcp-call.js';
import {
  APPROVAL_SCHEMA,
  answeredBy,
  approvalMessage,
  approvalOf,
  callToolResultOf,
  elicitationRequestId,
  inputAnswerOf,
  inputElicitation,
} from './mcp-mapping.js';
import { isTerminal, type McpTasks, TASK_PARAMS, type TaskCall, type TaskState } from './mcp-tasks.js';
import type { McpTaskRecord } from './mcp-tasks-records.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** JSON-RPC: Missing Required Client Capability (the extension's tasks/* of a client that did not declare it). */
export const MISSING_CAPABILITY = -32021;

type Message = Record<string, unknown>;

/** Whether the request's client capabilities declare the extension. */
export function declaresTasks(caps: Message | undefined): boolean {
  const ext = caps?.extensions;
  return typeof ext === 'object' && ext !== null && (ext as Message)[TASKS_EXTENSION] !== undefined;
}

/** The extension's DetailedTask of a record in a state. */
export function wireTaskExt(record: McpTaskRecord, s: TaskState): Message {
  const task: Message = {
    taskId: record.taskId,
    status: s.status,
    ...(s.statusMessage !== undefined ? { statusMessage: s.statusMessage } : {}),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(s.updatedAt).toISOString(),
    ttlMs: record.ttlMs,
    pollIntervalMs: record.pollMs,
  };
  if (s.status === 'completed' && s.result) task.result = s.result;
  if (s.status === 'failed' && s.error) task.error = s.error;
  if (s.status === 'input_required') task.inputRequests = inputRequestsOf(s);
  return task;
}

/** What the call waits for, keyed as the 2025 elicitations' ids (`td-confirm:<id>`, `td-input:<id>`): unique per task. */
function inputRequestsOf(s: TaskState): Message {
  const out: Message = {};
  for (const x of s.confirmations ?? [])
    out[elicitationRequestId('confirm', x.confirmationId)] = {
      method: 'elicitation/create',
      params: { mode: 'form', message: approvalMessage(x.name, x.args), requestedSchema: APPROVAL_SCHEMA },
    };
  for (const x of s.inputs ?? [])
    if (x.kind !== 'client')
      out[elicitationRequestId('input', x.inputId)] = { method: 'elicitation/create', params: inputElicitation(x) };
  return out;
}

/** What a 2026 tools/call as a possible task needs of its request. */
export interface ExtCallContext {
  signal: AbortSignal;
  watch(session: string, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
}

/**
 * A tools/call of a client with the extension: its round begun; its CallToolResult when it ends
 * within TD_MCP_TASK_AFTER_MS without waiting for a person, else its task, stored, as
 * `resultType: "task"`.
 */
export async function callMaybeTask(tasks: McpTasks, call: TaskCall, c: ExtCallContext): Promise<Message> {
  const asked = new AbortController();
  const mine = (e: DispatchEvent) => e.data.run === call.ids.run && e.data.callId === call.ids.callId;
  const unsubscribe = await c.watch(call.session, (e) => {
    if ((e.name === 'confirm.requested' || e.name === 'input.requested') && mine(e)) asked.abort();
  });
  try {
    const begun = await tasks.begin(call);
    if (begun.done) {
      const r = begun.done.results.find((x) => x.id === call.ids.callId) ?? begun.done.results[0];
      if (r) return callToolResultOf(r, begun.done.round, isMcpToolName(r.name));
    }
    const provisional: McpTaskRecord = {
      taskId: '',
      owner: call.owner,
      session: call.session,
      run: call.ids.run,
      round: begun.round,
      callId: call.ids.callId,
      form: 'ext',
      ttlMs: tasks.retentionMs,
      pollMs: 0,
      createdAt: Date.now(),
    };
    const s = await tasks.state(provisional, tasks.afterMs, AbortSignal.any([c.signal, asked.signal]));
    if (s.status === 'failed') throw new ProtocolError(s.error?.code ?? -32603, s.error?.message ?? 'the call failed');
    if (isTerminal(s.status) && s.result) return s.result;
    const record = await tasks.record(begun, 'ext', undefined);
    // The seed Task (CreateTaskResult = Result & Task): what it waits for comes with tasks/get.
    const { inputRequests: _i, result: _r, error: _e, ...seed } = wireTaskExt(record, await tasks.state(record));
    return { ...seed, resultType: 'task' };
  } finally {
    unsubscribe();
  }
}

/** What the extension's methods need of their request. */
export interface ExtTaskContext {
  owner: string;
  /** The request's client capabilities (its `_meta` envelope). */
  capabilities(ctx: unknown): Message | undefined;
}

const rethrow = (e: unknown): never => {
  if (e instanceof McpCallError) throw new ProtocolError(e.code, e.message);
  throw e;
};

/** tasks/get, tasks/update and tasks/cancel on a 2026 server of one request. */
export function registerTasksExt(server: Server, tasks: McpTasks, c: ExtTaskContext): void {
  const handle = (method: string, fn: (task: McpTaskRecord, params: Message, ctx: unknown) => Promise<Message>) =>
    server.setRequestHandler(method, { params: TASK_PARAMS }, async (params, ctx) => {
      try {
        if (!declaresTasks(c.capabilities(ctx)))
          throw new McpCallError(MISSING_CAPABILITY, `Missing required client capability: ${TASKS_EXTENSION}`);
        return (await fn(await tasks.find(params.taskId, c.owner), params, ctx)) as never;
      } catch (e) {
        return rethrow(e);
      }
    });
  handle('tasks/get', async (task) => wireTaskExt(task, await tasks.state(task)));
  handle('tasks/update', async (task, params, ctx) => {
    // The SDK lifts a request's inputResponses out of its params (multi round-trip requests).
    const lifted = (ctx as { mcpReq?: { inputResponses?: unknown } }).mcpReq?.inputResponses;
    const responses = params.inputResponses ?? lifted;
    if (typeof responses === 'object' && responses !== null)
      for (const [key, response] of Object.entries(responses as Message)) await answer(tasks, task, key, response);
    return {};
  });
  handle('tasks/cancel', async (task) => {
    await tasks.cancel(task);
    return {};
  });
}

/** One input response: an approval or an answer of this task's call (unknown or answered keys: ignored). */
async function answer(tasks: McpTasks, task: McpTaskRecord, key: string, response: unknown): Promise<void> {
  const target = answeredBy(key);
  if (!target) return;
  const d = tasks.dispatcher;
  try {
    if (target.kind === 'confirm') {
      const pending = (await d.pendingConfirmations(task.session)).find((x) => x.confirmationId === target.id);
      if (pending?.round === task.round && pending.callId === task.callId)
        await d.answerConfirmation(task.session, target.id, { ...approvalOf(response), who: 'mcp-client' });
      return;
    }
    const input = (await d.pendingInputs(task.session)).find((x) => x.inputId === target.id);
    if (input?.round === task.round && input.callId === task.callId)
      await d.answerInput(task.session, target.id, inputAnswerOf(input.kind, response));
  } catch {
    // Answered already (the API, first answer wins), timed out or cancelled.
  }
}
