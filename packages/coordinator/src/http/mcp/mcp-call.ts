import { randomUUID } from 'node:crypto';
import { isMcpToolName } from '@tool-dispatch/shared';
import type { Dispatcher } from '../../dispatcher.js';
import type { DispatchEvent } from '../../events/event-bus.js';
import type { ParkedInput } from '../../model.js';
import { RequestError } from '../../request-error.js';
import {
  APPROVAL_SCHEMA,
  approvalMessage,
  type CallIds,
  callIdsOf,
  callToolResultOf,
  elicitationRequestId,
  inputElicitation,
} from './mcp-mapping.js';
import { CallProgressNotes } from './mcp-progress.js';
import type { McpSessionRecord } from './mcp-sessions.js';

/** JSON-RPC's invalid params (API.md: an Idempotency-Key reused with a different call). */
export const INVALID_PARAMS = -32602;

/** How often a call with a progressToken hears `notifications/progress` (API.md: at least every 5 s). */
export const MCP_PROGRESS_MS = 2_000;

/** A JSON-RPC error a handler throws: the SDK answers it with this code and message. */
export class McpCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** What one tools/call needs of the request it came in. */
export interface McpCallContext {
  record: McpSessionRecord;
  requestId: string | number;
  name: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
  /** Sends a JSON-RPC message on the response stream of this tools/call. */
  send(message: Record<string, unknown>): Promise<void>;
  /** Aborted by `notifications/cancelled` for this call, or `DELETE /mcp`. */
  cancel: AbortSignal;
  /** Hears the session's events (one subscription per session and coordinator, shared by its calls). */
  watch(session: string, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
}

/**
 * One tools/call: a round of one call in the MCP session's session and run, through all three
 * passes. While it waits, approvals and questions of this call are asked of a client that declared
 * elicitation (still answerable through the API; the first answer wins) and progress goes out at
 * least every MCP_PROGRESS_MS when the client gave a progressToken.
 */
export async function runMcpCall(dispatcher: Dispatcher, c: McpCallContext): Promise<Record<string, unknown>> {
  const ids = callIdsOf(c.meta, c.record.id, () => `mcp-${randomUUID()}`);
  const watch = new CallWatch(dispatcher, c, ids);
  await watch.start();
  try {
    const response = await dispatcher.submitRound({
      session: c.record.session,
      run: ids.run,
      calls: [{ id: ids.callId, name: c.name, args: c.args }],
      ...(ids.idempotencyKey !== undefined ? { idempotencyKey: ids.idempotencyKey } : {}),
      cancel: c.cancel,
    });
    const result = response.results[0];
    if (!result) throw new McpCallError(-32603, 'the round answered no result');
    return callToolResultOf(result, response.round, isMcpToolName(result.name));
  } catch (e) {
    if (e instanceof RequestError && e.code === 'idempotency_conflict')
      throw new McpCallError(
        INVALID_PARAMS,
        `_meta["tool-dispatch/idempotencyKey"] ${ids.idempotencyKey} was used in run ${ids.run} for a different call; nothing ran (${e.message})`,
      );
    throw e;
  } finally {
    await watch.stop();
  }
}

/** A call's watch: the session's events of this call, the elicitations asked, progress. */
class CallWatch {
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Elicitations sent and not known to be answered: cancelled on the client when the call ends. */
  private readonly asked = new Set<string>();
  private readonly progress: CallProgressNotes;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly c: McpCallContext,
    private readonly ids: CallIds,
  ) {
    this.progress = new CallProgressNotes(c.meta, (params) =>
      c.send({ jsonrpc: '2.0', method: 'notifications/progress', params }),
    );
  }

  async start(): Promise<void> {
    // Only a client that can be asked needs the events at once; progress reads where the call is.
    if (this.c.record.elicitation) this.unsubscribe = await this.c.watch(this.c.record.session, (e) => this.onEvent(e));
    if (this.progress.token === undefined) return;
    this.progress.notify();
    this.timer = setInterval(() => this.tick(), MCP_PROGRESS_MS);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    // The call is over: questions still open on the client are withdrawn (answered through the API).
    for (const requestId of this.asked)
      await this.c
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'answered' } })
        .catch(() => undefined);
  }

  private mine(e: DispatchEvent): boolean {
    return e.data.run === this.ids.run && e.data.callId === this.ids.callId;
  }

  private onEvent(e: DispatchEvent): void {
    if (e.name === 'round.started' && e.data.run === this.ids.run) {
      const calls = Array.isArray(e.data.calls) ? (e.data.calls as { id?: unknown }[]) : [];
      if (calls.some((x) => x.id === this.ids.callId)) this.progress.moveTo('running');
    } else if (e.name === 'confirm.requested' && this.mine(e)) {
      this.progress.moveTo('waiting for approval');
      this.askApproval(e.data);
    } else if (e.name === 'input.requested' && this.mine(e)) {
      this.progress.moveTo('waiting for an answer');
      this.askInput(e.data);
    }
  }

  private askApproval(data: Record<string, unknown>): void {
    if (!this.c.record.elicitation || typeof data.confirmationId !== 'string') return;
    const id = elicitationRequestId('confirm', data.confirmationId);
    const params = {
      mode: 'form',
      message: approvalMessage(String(data.name), data.args),
      requestedSchema: APPROVAL_SCHEMA,
    };
    this.elicit(id, params);
  }

  private askInput(data: Record<string, unknown>): void {
    if (!this.c.record.elicitation || typeof data.inputId !== 'string') return;
    const kind = data.kind as ParkedInput['kind'];
    // A client tool is answered by the agent backend through the API, not by a person.
    if (kind === 'client') return;
    const args = typeof data.args === 'object' && data.args !== null ? (data.args as Record<string, unknown>) : {};
    this.elicit(elicitationRequestId('input', data.inputId), inputElicitation({ kind, name: String(data.name), args }));
  }

  private elicit(id: string, params: Record<string, unknown>): void {
    if (this.asked.has(id)) return;
    this.asked.add(id);
    this.c.send({ jsonrpc: '2.0', id, method: 'elicitation/create', params }).catch(() => this.asked.delete(id));
  }

  /** Each tick: where the call is now, read from the pending confirmations and questions. */
  private tick(): void {
    this.refreshStage().then(
      () => this.progress.notify(),
      () => this.progress.notify(),
    );
  }

  private async refreshStage(): Promise<void> {
    const session = this.c.record.session;
    const [confirms, inputs] = await Promise.all([
      this.dispatcher.pendingConfirmations(session),
      this.dispatcher.pendingInputs(session),
    ]);
    const isMine = (x: { run: string; callId: string }) => x.run === this.ids.run && x.callId === this.ids.callId;
    if (confirms.some(isMine)) this.progress.setStage('waiting for approval');
    else if (inputs.some(isMine)) this.progress.setStage('waiting for an answer');
    else this.progress.setStage('running');
  }
}
