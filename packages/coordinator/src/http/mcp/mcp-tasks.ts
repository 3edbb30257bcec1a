// (v1.3) MCP tasks over the stored round (API.md "MCP tasks"): one mechanism for both wires (the
// 2025-11-25 utility in mcp-tasks-2025.ts, the 2026 extension in mcp-tasks-ext.ts). A task is a
// round of one call begun with `submitRoundAsync` plus a small record in the store naming it;
// its status and answer are the round's (`getRound`), its cancel the round's (`cancelRound`).
import { randomUUID } from 'node:crypto';
import type { StandardSchemaV1 } from '@modelcontextprotocol/server';
import { isMcpToolName } from '@tool-dispatch/shared';
import type { PendingConfirmation } from '../../confirm/confirm-hub.js';
import type { Dispatcher } from '../../dispatcher.js';
import type { ParkedInput, RoundResponse } from '../../model.js';
import { RequestError } from '../../request-error.js';
import { INVALID_PARAMS, McpCallError } from './mcp-call.js';
import { type CallIds, callToolResultOf } from './mcp-mapping.js';
import type { McpTaskRecord, McpTaskRecords } from './mcp-tasks-records.js';

/** The poll interval a task suggests. */
export const TASK_POLL_MS = 1_000;
/** A task nobody saw end is kept at most this long past its TTL (a round may wait overnight for a person). */
export const TASK_MAX_RUNNING_MS = 7 * 24 * 60 * 60 * 1000;
/** One page of `tasks/list`. */
export const TASK_PAGE = 100;
/** Longest single wait on the round (getRound's own cap). */
const WAIT_SLICE_MS = 60_000;

/** The params of a task method as they came (each handler reads what it needs): a Standard Schema passing them through. */
export const TASK_PARAMS: StandardSchemaV1<Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'tool-dispatch',
    validate: (value) => ({
      value: typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {},
    }),
  },
};

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Where a task is, for either wire. */
export interface TaskState {
  status: TaskStatus;
  statusMessage?: string;
  /** The CallToolResult, once completed or cancelled (a cancelled call's result says so). */
  result?: Record<string, unknown>;
  /** The JSON-RPC error, once failed. */
  error?: { code: number; message: string };
  /** While input_required: what the call waits for. */
  confirmations?: PendingConfirmation[];
  inputs?: ParkedInput[];
  /** Epoch ms of the last change known (its end once ended). */
  updatedAt: number;
}

export const isTerminal = (s: TaskStatus): boolean => s === 'completed' || s === 'failed' || s === 'cancelled';

export interface McpTasksOptions {
  dispatcher: Dispatcher;
  records: McpTaskRecords;
  /** TD_ROUND_RETENTION_MS: no task is kept longer after it ends than its round. */
  retentionMs: number;
  /** TD_MCP_TASK_AFTER_MS: a 2026 extension client's call becomes a task past this long. */
  afterMs: number;
}

/** A call to begin as a task's round. */
export interface TaskCall {
  owner: string;
  session: string;
  ids: CallIds;
  name: string;
  args: Record<string, unknown>;
}

/** The round a task names, begun: its place, and its answer when it had ended already. */
export interface BegunCall {
  call: TaskCall;
  round: string;
  done?: RoundResponse;
}

const TASK_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The 2025 `ttl` / 2026 `ttlMs` asked for, capped at the rounds' retention. */
export function ttlOf(asked: unknown, retentionMs: number): number {
  return typeof asked === 'number' && Number.isFinite(asked) && asked >= 0
    ? Math.min(Math.floor(asked), retentionMs)
    : retentionMs;
}

export class McpTasks {
  private readonly closing = new AbortController();

  constructor(private readonly o: McpTasksOptions) {}

  get afterMs(): number {
    return this.o.afterMs;
  }

  get retentionMs(): number {
    return this.o.retentionMs;
  }

  get dispatcher(): Dispatcher {
    return this.o.dispatcher;
  }

  /** Begins the call's round (stored, so any coordinator answers for it) and leaves it to run. */
  async begin(call: TaskCall): Promise<BegunCall> {
    try {
      const reply = await this.o.dispatcher.submitRoundAsync({
        session: call.session,
        run: call.ids.run,
        calls: [{ id: call.ids.callId, name: call.name, args: call.args }],
        ...(call.ids.idempotencyKey !== undefined ? { idempotencyKey: call.ids.idempotencyKey } : {}),
      });
      if (reply.status === 'done') return { call, round: reply.response.round, done: reply.response };
      return { call, round: reply.round };
    } catch (e) {
      if (e instanceof RequestError && e.code === 'idempotency_conflict')
        throw new McpCallError(
          INVALID_PARAMS,
          `_meta["tool-dispatch/idempotencyKey"] ${call.ids.idempotencyKey} was used in run ${call.ids.run} for a different call; nothing ran (${e.message})`,
        );
      throw e;
    }
  }

  /** The task record of a begun round, in the store before this resolves; its end is watched from here. */
  async record(begun: BegunCall, form: McpTaskRecord['form'], ttlAsked: unknown): Promise<McpTaskRecord> {
    const { call } = begun;
    const record: McpTaskRecord = {
      taskId: randomUUID(),
      owner: call.owner,
      session: call.session,
      run: call.ids.run,
      round: begun.round,
      callId: call.ids.callId,
      form,
      ttlMs: ttlOf(ttlAsked, this.o.retentionMs),
      pollMs: TASK_POLL_MS,
      createdAt: Date.now(),
    };
    await this.o.records.put(record, record.ttlMs + TASK_MAX_RUNNING_MS);
    if (begun.done) {
      await this.o.records.ended(record.taskId, record.createdAt);
      record.endedAt = record.createdAt;
    } else this.watchEnd(record);
    return record;
  }

  /** The task of this id when `owner` made it (another token's, or a malformed id: not found). */
  async find(taskId: unknown, owner: string): Promise<McpTaskRecord> {
    const record = typeof taskId === 'string' && TASK_ID.test(taskId) ? await this.o.records.get(taskId) : null;
    if (!record || record.owner !== owner)
      throw new McpCallError(INVALID_PARAMS, `Failed to retrieve task: Task not found (${String(taskId)})`);
    return record;
  }

  async list(owner: string, cursor: string | undefined) {
    return this.o.records.list(owner, cursor, TASK_PAGE);
  }

  /**
   * The task's state from its round: done (completed, or cancelled when its call was), failed
   * (the round given up), input_required (its call at the gate or parked), else working. With
   * `waitMs`, waits for the round's end first. A round no longer kept: the task is not found.
   */
  async state(record: McpTaskRecord, waitMs = 0, signal?: AbortSignal): Promise<TaskState> {
    const d = this.o.dispatcher;
    let view: Awaited<ReturnType<Dispatcher['getRound']>>;
    try {
      view = await d.getRound(record.session, record.run, record.round, {
        waitMs: Math.min(waitMs, WAIT_SLICE_MS),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (!(e instanceof RequestError && e.code === 'round_failed')) throw e;
      this.sawEnd(record);
      const message = `the round failed: ${e.message}`;
      return {
        status: 'failed',
        statusMessage: message,
        error: { code: -32603, message },
        updatedAt: this.endOf(record),
      };
    }
    if (!view) throw new McpCallError(INVALID_PARAMS, `Failed to retrieve task: Task has expired (${record.taskId})`);
    if (view.status === 'done') {
      this.sawEnd(record);
      return this.doneState(record, view.response);
    }
    const call = view.calls.find((c) => c.id === record.callId) ?? view.calls[0];
    if (call?.state === 'waiting_for_approval' || call?.state === 'waiting_for_input') {
      const mine = (x: { run: string; callId: string; round: string }) =>
        x.run === record.run && x.callId === record.callId && x.round === record.round;
      const [confirmations, inputs] = await Promise.all([
        d.pendingConfirmations(record.session),
        d.pendingInputs(record.session),
      ]);
      return {
        status: 'input_required',
        statusMessage: call.state === 'waiting_for_approval' ? 'waiting for approval' : 'waiting for an answer',
        confirmations: confirmations.filter(mine),
        inputs: inputs.filter(mine),
        updatedAt: record.createdAt,
      };
    }
    return { status: 'working', statusMessage: call?.state ?? 'queued', updatedAt: record.createdAt };
  }

  /** Waits until the task is terminal, or input_required when `untilInput` (tasks/result asks then). */
  async settle(record: McpTaskRecord, signal: AbortSignal, untilInput = false): Promise<TaskState> {
    for (;;) {
      const s = await this.state(record, WAIT_SLICE_MS, signal);
      if (isTerminal(s.status) || (untilInput && s.status === 'input_required') || signal.aborted) return s;
    }
  }

  /** Cancels the task's round wherever it runs (its command killed with its process group). */
  async cancel(record: McpTaskRecord): Promise<void> {
    await this.o.dispatcher.cancelRound(record.session, record.run, record.round);
  }

  async close(): Promise<void> {
    this.closing.abort();
  }

  private doneState(record: McpTaskRecord, response: RoundResponse): TaskState {
    const r = response.results.find((x) => x.id === record.callId) ?? response.results[0];
    if (!r)
      return {
        status: 'failed',
        error: { code: -32603, message: 'the round answered no result' },
        updatedAt: this.endOf(record),
      };
    const result = callToolResultOf(r, response.round, isMcpToolName(r.name));
    const cancelled = r.status === 'error' && r.error?.code === 'cancelled';
    return { status: cancelled ? 'cancelled' : 'completed', result, updatedAt: this.endOf(record) };
  }

  private endOf(record: McpTaskRecord): number {
    return record.endedAt ?? Date.now();
  }

  /** The round's end seen: the record is kept its TTL from now on (the first to see it wins). */
  private sawEnd(record: McpTaskRecord): void {
    if (record.endedAt !== undefined) return;
    record.endedAt = Date.now();
    this.o.records.ended(record.taskId, record.endedAt).catch(() => undefined);
  }

  /** Hears the round's commit on this coordinator, so the TTL counts from its end, not from a poll. */
  private watchEnd(record: McpTaskRecord): void {
    const signal = this.closing.signal;
    const loop = async () => {
      while (!signal.aborted) {
        const s = await this.state(record, WAIT_SLICE_MS, signal);
        if (isTerminal(s.status)) return;
      }
    };
    loop().catch(() => undefined);
  }
}
