import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { LATEST_PROTOCOL_VERSION, ProtocolError, Server, type Transport } from '@modelcontextprotocol/server';
import { DEFAULT_MCP_RUN_IDLE_MS } from '@tool-dispatch/shared';
import type { Dispatcher } from '../../dispatcher.js';
import type { DispatchEvent } from '../../events/event-bus.js';
import { McpCallError, runMcpCall } from './mcp-call.js';
import { answeredBy, approvalOf, inputAnswerOf, mcpToolsOf } from './mcp-mapping.js';
import { isQuiet, type McpCallParams } from './mcp-quiet-call.js';
import type { McpCancel, McpSessionRecord, McpSessions } from './mcp-sessions.js';
import type { McpTasks } from './mcp-tasks.js';
import { registerTasks2025, TASKS_CAPABILITY_2025 } from './mcp-tasks-2025.js';

/** How often the catalog is compared while a client listens for list_changed. */
export const MCP_CATALOG_POLL_MS = 1_000;

/** Observation points of the MCP server (metrics, traces); all optional. */
export interface McpHooks {
  /** One JSON-RPC request or notification handled, by method (`response` for a client's answer). */
  request?(method: string): void;
  /** MCP sessions opened (+1) and ended (-1) through this coordinator. */
  sessions?(delta: number): void;
  /** Wraps a tools/call (its span): the MCP session and method as attributes. */
  call?<T>(
    info: { mcpSession: string; session: string; method: string; tool: string },
    fn: () => Promise<T>,
  ): Promise<T>;
}

export interface McpServiceOptions {
  dispatcher: Dispatcher;
  sessions: McpSessions;
  version: string;
  hooks?: McpHooks;
  catalogPollMs?: number;
  /** TD_MCP_RUN_IDLE_MS: a 2026-07-28 client's run `mcp-<n>` ends after this long without a call. */
  runIdleMs?: number;
  /** (v1.3) MCP tasks over the stored round (Streamable HTTP; absent: no task support). */
  tasks?: McpTasks;
}

export const SERVER_CAPABILITIES = { tools: { listChanged: true } };

/** A client's listening stream (GET /mcp, or stdio): where list_changed goes. */
export interface Listener {
  mcpSession: string;
  notify(message: Record<string, unknown>): void;
  end(): void;
}

/**
 * The MCP server over the Dispatcher (API.md "MCP server"): an adapter, not a second engine. Each
 * request gets a fresh SDK `Server` on a stateless transport, and the MCP session it names is read
 * from the store, so any coordinator serves any request of a session; a server's request
 * (elicitation) goes out on the response stream of the tools/call that caused it, and its answer,
 * posted to any coordinator, goes to the confirm and input hubs through the Dispatcher.
 */
export class McpService {
  private readonly inFlight = new Map<string, AbortController>();
  /** 2026-07-28 rounds by scope and key: the cancels of the requests waiting for each (a retry adds its own). */
  private readonly held = new Map<string, Set<AbortController>>();
  private readonly listeners = new Set<Listener>();
  private catalogKey: string | undefined;
  private poll: NodeJS.Timeout | undefined;
  private unsubscribeCancels: (() => void) | undefined;
  /** Per session: one event subscription shared by this coordinator's calls of it. */
  private readonly watches = new Map<
    string,
    { listeners: Set<(e: DispatchEvent) => void>; ready: Promise<() => void> }
  >();

  constructor(private readonly o: McpServiceOptions) {}

  get dispatcher(): Dispatcher {
    return this.o.dispatcher;
  }

  get sessions(): McpSessions {
    return this.o.sessions;
  }

  get hooks(): McpHooks {
    return this.o.hooks ?? {};
  }

  get version(): string {
    return this.o.version;
  }

  get tasks(): McpTasks | undefined {
    return this.o.tasks;
  }

  get runIdleMs(): number {
    return this.o.runIdleMs ?? DEFAULT_MCP_RUN_IDLE_MS;
  }

  /** (2026-07-28) Holds a round's cancel under its scope and key until the returned removal. */
  hold(scope: string, key: string, cancel: AbortController): () => void {
    const k = inFlightKey(scope, key);
    let set = this.held.get(k);
    if (!set) {
      set = new Set();
      this.held.set(k, set);
    }
    set.add(cancel);
    const mine = set;
    return () => {
      mine.delete(cancel);
      if (mine.size === 0 && this.held.get(k) === mine) this.held.delete(k);
    };
  }

  async start(): Promise<void> {
    this.unsubscribeCancels = await this.o.sessions.onCancel((c) => this.cancelHere(c));
  }

  async close(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    this.unsubscribeCancels?.();
    for (const l of [...this.listeners]) l.end();
    for (const ac of this.inFlight.values()) ac.abort(new Error('the server is closing'));
  }

  /** A fresh SDK server bound to one MCP session, answering tools/list and tools/call. */
  serverFor(record: () => McpSessionRecord, transport: () => Transport | undefined, owner?: string): Server {
    // (v1.3) Tasks on Streamable HTTP, bound to the request's token.
    const tasks = owner !== undefined ? this.o.tasks : undefined;
    const capabilities = tasks ? { ...SERVER_CAPABILITIES, tasks: TASKS_CAPABILITY_2025 } : SERVER_CAPABILITIES;
    const server = new Server(
      { name: 'tool-dispatch', version: this.o.version },
      { capabilities, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler('tools/list', async () => {
      this.hooks.request?.('tools/list');
      const r = record();
      const [view, catalog] = await Promise.all([this.o.dispatcher.toolsFor(r.session), this.o.dispatcher.catalog()]);
      const tools = mcpToolsOf(view.tools, catalog);
      return { tools: tasks ? tools.map((t) => ({ ...t, execution: { taskSupport: 'optional' } })) : tools } as never;
    });
    if (tasks && owner !== undefined)
      registerTasks2025(server, tasks, {
        owner,
        record: record(),
        send: async (message, relatedRequestId) => {
          await transport()?.send(message as never, { relatedRequestId });
        },
        watch: (session, onEvent) => this.watch(session, onEvent),
      });
    server.setRequestHandler(
      'tools/call',
      async (request, ctx) => this.callTool(record(), request.params, ctx.mcpReq.id, transport()) as Promise<never>,
    );
    return server;
  }

  /** A tools/call of an MCP session, counted and traced (the hooks) whichever way it came in. */
  callTool(
    record: McpSessionRecord,
    params: McpCallParams,
    requestId: string | number,
    transport: Transport | undefined,
  ): Promise<Record<string, unknown>> {
    const hooks = this.hooks;
    hooks.request?.('tools/call');
    const call = () => this.call(record, params, requestId, transport);
    if (!hooks.call) return call();
    return hooks.call(
      { mcpSession: record.id, session: record.session, method: 'tools/call', tool: params.name },
      call,
    );
  }

  private async call(
    record: McpSessionRecord,
    params: McpCallParams,
    requestId: string | number,
    transport: Transport | undefined,
  ): Promise<Record<string, unknown>> {
    const key = inFlightKey(record.id, requestId);
    const ac = new AbortController();
    this.inFlight.set(key, ac);
    try {
      return await runMcpCall(this.o.dispatcher, {
        record,
        requestId,
        name: params.name,
        args: params.arguments ?? {},
        meta: params._meta,
        send: async (message) => {
          await transport?.send(message as never, { relatedRequestId: requestId });
        },
        cancel: ac.signal,
        watch: (session, onEvent) => this.watch(session, onEvent),
      });
    } catch (e) {
      if (e instanceof McpCallError) throw new ProtocolError(e.code, e.message);
      throw e;
    } finally {
      this.inFlight.delete(key);
    }
  }

  /** Hears a session's events through one subscription per session, shared by the calls in flight here. */
  async watch(session: string, onEvent: (e: DispatchEvent) => void): Promise<() => void> {
    let w = this.watches.get(session);
    if (!w) {
      const listeners = new Set<(e: DispatchEvent) => void>();
      const ready = this.o.dispatcher.subscribe(session, undefined, (e) => {
        for (const l of listeners) l(e);
      });
      w = { listeners, ready };
      this.watches.set(session, w);
      ready.catch(() => this.watches.delete(session));
    }
    const watch = w;
    watch.listeners.add(onEvent);
    await watch.ready;
    return () => {
      watch.listeners.delete(onEvent);
      if (watch.listeners.size > 0 || this.watches.get(session) !== watch) return;
      this.watches.delete(session);
      watch.ready.then((unsubscribe) => unsubscribe()).catch(() => undefined);
    };
  }

  /** Serves the JSON-RPC requests of one POST on a fresh server and stateless transport (the SDK's). */
  async serveRequests(
    record: McpSessionRecord,
    raw: Parameters<NodeStreamableHTTPServerTransport['handleRequest']>[0],
    res: ServerResponse,
    body: unknown,
    owner?: string,
  ): Promise<void> {
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: isQuiet(record, body),
    });
    const server = this.serverFor(
      () => record,
      () => transport,
      owner,
    );
    await server.connect(transport);
    res.on('close', () => {
      transport.close().catch(() => undefined);
      server.close().catch(() => undefined);
    });
    await transport.handleRequest(raw, res, body);
  }

  /** Creates the MCP session of an initialize (and its session `mcp-<id>` of provider mcp, unless one is named). */
  async initialize(
    params: Record<string, unknown>,
    bound: string | undefined,
    tenant?: string,
  ): Promise<McpSessionRecord> {
    const id = randomUUID();
    const session = bound ?? `mcp-${id}`;
    // A new session goes in the token's tenant (TD_API_TOKENS); a bound one was checked by the access hook.
    if (bound === undefined)
      await this.o.dispatcher.putSession(session, { provider: 'mcp', ...(tenant ? { tenant } : {}) });
    const caps = params.capabilities;
    const elicitation =
      typeof caps === 'object' && caps !== null && (caps as Record<string, unknown>).elicitation !== undefined;
    const record: McpSessionRecord = {
      id,
      session,
      elicitation,
      protocolVersion: typeof params.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION,
      createdAt: Date.now(),
    };
    await this.o.sessions.create(record);
    this.hooks.sessions?.(+1);
    return record;
  }

  /** DELETE /mcp: the MCP session ends, its calls in flight (on any coordinator) are cancelled. */
  async end(record: McpSessionRecord): Promise<void> {
    if (await this.o.sessions.delete(record.id)) this.hooks.sessions?.(-1);
    await this.o.sessions.cancel({ mcpSession: record.id });
    for (const l of [...this.listeners]) if (l.mcpSession === record.id) l.end();
  }

  /** A notification the client posted: `notifications/cancelled` cancels its tools/call wherever it runs. */
  async notified(record: McpSessionRecord, message: Record<string, unknown>): Promise<void> {
    const method = String(message.method);
    this.hooks.request?.(method);
    if (method !== 'notifications/cancelled') return;
    const params = (message.params ?? {}) as Record<string, unknown>;
    const requestId = params.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    await this.o.sessions.cancel({ mcpSession: record.id, requestId });
  }

  /**
   * A response the client posted: the answer to an elicitation, handed to the confirm or input hub
   * of the MCP session's session, or (a task's question, `owner` the token posting it) of the task's.
   */
  async answered(record: McpSessionRecord, message: Record<string, unknown>, owner?: string): Promise<void> {
    this.hooks.request?.('response');
    const target = answeredBy(message.id);
    // An error answer (the client could not ask) leaves the question to the API.
    if (!target || message.result === undefined) return;
    const d = this.o.dispatcher;
    try {
      // Another token's task, or none: not found, nothing answered.
      const session =
        target.taskId === undefined
          ? record.session
          : (await this.o.tasks?.find(target.taskId, owner ?? '').catch(() => undefined))?.session;
      if (session === undefined) return;
      if (target.kind === 'confirm') {
        await d.answerConfirmation(session, target.id, { ...approvalOf(message.result), who: 'mcp-client' });
        return;
      }
      const input = (await d.pendingInputs(session)).find((x) => x.inputId === target.id);
      if (input) await d.answerInput(session, target.id, inputAnswerOf(input.kind, message.result));
    } catch {
      // Answered already (through the API, first answer wins), timed out or cancelled.
    }
  }

  private cancelHere(c: McpCancel): void {
    if (c.requestId !== undefined) {
      for (const ac of this.held.get(inFlightKey(c.mcpSession, c.requestId)) ?? [])
        ac.abort(new Error('cancelled by the MCP client'));
      this.inFlight.get(inFlightKey(c.mcpSession, c.requestId))?.abort(new Error('cancelled by the MCP client'));
      return;
    }
    const prefix = `${c.mcpSession}\u0000`;
    for (const [k, ac] of this.inFlight) if (k.startsWith(prefix)) ac.abort(new Error('the MCP session ended'));
  }

  /** GET /mcp: a stream where `notifications/tools/list_changed` reaches the client. */
  listen(record: McpSessionRecord, res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'mcp-session-id': record.id,
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    const heartbeat = setInterval(() => res.write(': ping\n\n'), 15_000);
    heartbeat.unref();
    const remove = this.addListener({
      mcpSession: record.id,
      notify: (message) => res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`),
      end: () => res.end(),
    });
    res.on('close', () => {
      clearInterval(heartbeat);
      remove();
    });
  }

  /** A client listening for list_changed (a GET stream, or the stdio connection); returns its removal. */
  addListener(listener: Listener): () => void {
    this.listeners.add(listener);
    this.watchCatalog();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.poll) {
        clearInterval(this.poll);
        this.poll = undefined;
      }
    };
  }

  private watchCatalog(): void {
    if (this.poll) return;
    this.catalogKey = undefined;
    const check = () => this.checkCatalog().catch(() => undefined);
    check();
    this.poll = setInterval(check, this.o.catalogPollMs ?? MCP_CATALOG_POLL_MS);
    this.poll.unref();
  }

  private async checkCatalog(): Promise<void> {
    const catalog = await this.o.dispatcher.catalog();
    const key = JSON.stringify(catalog.map((c) => [c.name, c.description, c.parameters, c.annotations]));
    const before = this.catalogKey;
    this.catalogKey = key;
    if (before === undefined || before === key) return;
    for (const l of this.listeners) l.notify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  }
}

export const INSTRUCTIONS =
  'tool-dispatch: every call goes through dedupe, the result cache, the confirm gate and per-run order. ' +
  'Pass _meta["tool-dispatch/run"] to name the run, _meta["tool-dispatch/idempotencyKey"] to make a retry safe.';

const inFlightKey = (mcpSession: string, requestId: string | number) =>
  `${mcpSession}\u0000${JSON.stringify(requestId)}`;
