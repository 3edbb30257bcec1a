// (v1.3) The MCP 2025-11-25 tasks utility (API.md "MCP tasks"; the specification's
// basic/utilities/tasks of 2025-11-25, as @modelcontextprotocol/sdk 1.32's experimental tasks
// speak it): `params.task` on tools/call → CreateTaskResult, tasks/get, tasks/result (blocking,
// with the task's questions asked by elicitation on its stream), tasks/list, tasks/cancel.
import { ProtocolError, RELATED_TASK_META_KEY, type Server } from '@modelcontextprotocol/server';
import type { DispatchEvent } from '../../events/event-bus.js';
import { INVALID_PARAMS, McpCallError } from './mcp-call.js';
import {
  APPROVAL_SCHEMA,
  approvalMessage,
  callIdsOf,
  inputElicitation,
  taskElicitationRequestId,
} from './mcp-mapping.js';
import type { McpSessionRecord } from './mcp-sessions.js';
import { isTerminal, type McpTasks, TASK_PARAMS, type TaskState } from './mcp-tasks.js';
import type { McpTaskRecord } from './mcp-tasks-records.js';

/** The server's `tasks` capability (2025-11-25): tools/call as tasks, list and cancel. */
export const TASKS_CAPABILITY_2025 = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** How long a tasks/cancel waits for the round to end before it answers. */
const CANCEL_WAIT_MS = 10_000;

type Message = Record<string, unknown>;

/** The 2025 `Task` of a record in a state. */
export function wireTask2025(record: McpTaskRecord, s: TaskState): Record<string, unknown> {
  return {
    taskId: record.taskId,
    status: s.status,
    ...(s.statusMessage !== undefined ? { statusMessage: s.statusMessage } : {}),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(s.updatedAt).toISOString(),
    ttl: record.ttlMs,
    pollInterval: record.pollMs,
  };
}

/** A tools/call asking for a task (`params.task` an object). */
export function isTaskCall2025(m: Message): boolean {
  const params = m.params as Message | undefined;
  return m.method === 'tools/call' && typeof params?.task === 'object' && params.task !== null;
}

/**
 * A tools/call with `params.task`: its round begun and its task stored, then the JSON-RPC answer
 * (`{task}`, or the error a refused call gets).
 */
export async function createTask2025(
  tasks: McpTasks,
  record: McpSessionRecord,
  owner: string,
  m: Message,
): Promise<Message> {
  const params = (m.params ?? {}) as Message;
  const id = m.id as string | number;
  try {
    if (typeof params.name !== 'string' || params.name === '')
      throw new McpCallError(INVALID_PARAMS, 'tools/call needs params.name, the tool to call');
    const args = typeof params.arguments === 'object' && params.arguments !== null ? params.arguments : {};
    const meta = typeof params._meta === 'object' && params._meta !== null ? (params._meta as Message) : undefined;
    const ids = callIdsOf(meta, record.id, () => `mcp-${crypto.randomUUID()}`);
    const call = { owner, session: record.session, ids, name: params.name, args: args as Record<string, unknown> };
    const begun = await tasks.begin(call);
    const task = await tasks.record(begun, '2025-11-25', (params.task as Message).ttl);
    const state = await tasks.state(task);
    return { jsonrpc: '2.0', id, result: { task: wireTask2025(task, state) } };
  } catch (e) {
    const code = e instanceof McpCallError ? e.code : -32603;
    return { jsonrpc: '2.0', id, error: { code, message: e instanceof Error ? e.message : String(e) } };
  }
}

/** What the task methods need of the request they came in. */
export interface TaskRequestContext {
  owner: string;
  record: McpSessionRecord;
  /** Sends a message on the response stream of the request `relatedRequestId` names. */
  send(message: Message, relatedRequestId: string | number): Promise<void>;
  watch(session: string, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
}

const rethrow = (e: unknown): never => {
  if (e instanceof McpCallError) throw new ProtocolError(e.code, e.message);
  throw e;
};

/** tasks/get, tasks/result, tasks/list and tasks/cancel on a 2025-era server of one request. */
export function registerTasks2025(server: Server, tasks: McpTasks, c: TaskRequestContext): void {
  server.setRequestHandler('tasks/get', { params: TASK_PARAMS }, async (params) => {
    try {
      const task = await tasks.find(params.taskId, c.owner);
      return wireTask2025(task, await tasks.state(task)) as never;
    } catch (e) {
      return rethrow(e);
    }
  });
  server.setRequestHandler('tasks/result', { params: TASK_PARAMS }, async (params, ctx) => {
    try {
      const task = await tasks.find(params.taskId, c.owner);
      return (await taskResult(tasks, task, c, ctx.mcpReq.id, ctx.mcpReq.signal)) as never;
    } catch (e) {
      return rethrow(e);
    }
  });
  server.setRequestHandler('tasks/list', { params: TASK_PARAMS }, async (params) => {
    const cursor = typeof params.cursor === 'string' ? params.cursor : undefined;
    const page = await tasks.list(c.owner, cursor);
    const listed: Record<string, unknown>[] = [];
    for (const task of page.records) {
      const state = await tasks.state(task).catch(() => undefined); // its round expired meanwhile: not listed
      if (state) listed.push(wireTask2025(task, state));
    }
    return { tasks: listed, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) } as never;
  });
  server.setRequestHandler('tasks/cancel', { params: TASK_PARAMS }, async (params) => {
    try {
      const task = await tasks.find(params.taskId, c.owner);
      const before = await tasks.state(task);
      if (isTerminal(before.status))
        throw new McpCallError(INVALID_PARAMS, `Cannot cancel task in terminal status: ${before.status}`);
      await tasks.cancel(task);
      const after = await tasks.settle(task, AbortSignal.timeout(CANCEL_WAIT_MS));
      const shown: TaskState = isTerminal(after.status)
        ? after
        : { status: 'cancelled', statusMessage: 'cancelled by the client', updatedAt: Date.now() };
      return wireTask2025(task, shown) as never;
    } catch (e) {
      return rethrow(e);
    }
  });
}

/**
 * tasks/result: blocks until the task ends and answers its CallToolResult (a failed round: its
 * JSON-RPC error). While it waits at the gate or for an answer, a client that declared
 * elicitation is asked on this stream (the first answer wins, the API's too).
 */
async function taskResult(
  tasks: McpTasks,
  task: McpTaskRecord,
  c: TaskRequestContext,
  requestId: string | number,
  signal: AbortSignal,
): Promise<Message> {
  const asked = new Set<string>();
  let wake: (() => void) | undefined;
  const mine = (e: DispatchEvent) => e.data.run === task.run && e.data.callId === task.callId;
  const unsubscribe = await c.watch(task.session, (e) => {
    if ((e.name === 'confirm.requested' || e.name === 'input.requested') && mine(e)) wake?.();
  });
  try {
    for (;;) {
      // Listening before the read: a question asked in between wakes the wait below.
      const woken = new AbortController();
      wake = () => woken.abort();
      const s = await tasks.state(task);
      if (isTerminal(s.status)) return finalOf(task, s);
      if (s.status === 'input_required' && c.record.elicitation) await ask(s, asked, c, task, requestId);
      await tasks.state(task, 60_000, AbortSignal.any([signal, woken.signal]));
      wake = undefined;
      if (signal.aborted) throw new McpCallError(-32603, 'the client went away');
    }
  } finally {
    unsubscribe();
    for (const id of asked)
      await c
        .send(
          { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'answered' } },
          requestId,
        )
        .catch(() => undefined);
  }
}

function finalOf(task: McpTaskRecord, s: TaskState): Message {
  if (s.status === 'failed' || !s.result)
    throw new McpCallError(s.error?.code ?? -32603, s.error?.message ?? 'the task failed');
  const meta = (s.result._meta ?? {}) as Message;
  return { ...s.result, _meta: { ...meta, [RELATED_TASK_META_KEY]: { taskId: task.taskId } } };
}

/** The task's open questions, each asked once on the tasks/result stream. */
async function ask(
  s: TaskState,
  asked: Set<string>,
  c: TaskRequestContext,
  task: McpTaskRecord,
  requestId: string | number,
): Promise<void> {
  const related = { [RELATED_TASK_META_KEY]: { taskId: task.taskId } };
  const out: { id: string; params: Message }[] = [];
  for (const x of s.confirmations ?? [])
    out.push({
      id: taskElicitationRequestId(task.taskId, 'confirm', x.confirmationId),
      params: {
        mode: 'form',
        message: approvalMessage(x.name, x.args),
        requestedSchema: APPROVAL_SCHEMA,
        _meta: related,
      },
    });
  for (const x of s.inputs ?? [])
    if (x.kind !== 'client')
      out.push({
        id: taskElicitationRequestId(task.taskId, 'input', x.inputId),
        params: { ...inputElicitation(x), _meta: related },
      });
  for (const q of out) {
    if (asked.has(q.id)) continue;
    asked.add(q.id);
    await c.send({ jsonrpc: '2.0', id: q.id, method: 'elicitation/create', params: q.params }, requestId).catch(() => {
      asked.delete(q.id);
    });
  }
}
