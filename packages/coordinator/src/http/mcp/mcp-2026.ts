// MCP protocol 2026-07-28 at /mcp and over stdio (API.md v1.3): stateless requests, each with
// its version and the client's capabilities in `_meta`, served by the SDK's per-request entry
// (`createMcpHandler`, modern only: 2025 traffic keeps its own path in mcp-routes.ts) on a fresh
// SDK Server per request, so any coordinator answers any of them.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  InMemoryServerEventBus,
  isLegacyRequest,
  type McpHttpHandler,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  Server,
  type ServerContext,
  type ServerEvent,
  type ServerEventBus,
} from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import type { Dispatcher } from '../../dispatcher.js';
import { RequestError } from '../../request-error.js';
import { runModernCall } from './mcp-2026-call.js';
import { McpCallError } from './mcp-call.js';
import { callIdsOf, mcpToolsOf } from './mcp-mapping.js';
import { INSTRUCTIONS, type McpService, SERVER_CAPABILITIES } from './mcp-service.js';
import { callMaybeTask, declaresTasks, registerTasksExt, TASKS_EXTENSION } from './mcp-tasks-ext.js';

/** Who a 2026 request acts for and where: the session, whether it must be created, the token. */
export interface ModernBinding {
  session: string;
  /** The session is made on first use (`mcp-<token name>`), provider mcp, in this tenant. */
  create?: { tenant: string | undefined };
  /** The token's name (a requestState is good for it alone). */
  principal: string;
}

/** Sessions of provider mcp this process knows exist (no store read per request); forgotten past this many. */
const MAX_KNOWN_SESSIONS = 10_000;

/**
 * The 2026-07-28 side of the MCP server: a fresh SDK Server per request (HTTP) or per connection
 * (stdio) answering tools/list and tools/call in the binding's session; server/discover,
 * subscriptions/listen, the `_meta` envelope and the Mcp-Method/Mcp-Name headers are the SDK's.
 */
export class ModernMcp {
  private readonly handler: McpHttpHandler;
  private readonly bindings = new WeakMap<Request, ModernBinding>();
  private readonly known = new Set<string>();

  constructor(
    private readonly service: McpService,
    private readonly runIdleMs: number,
  ) {
    this.handler = createMcpHandler((ctx) => this.serverFor(ctx.requestInfo && this.bindings.get(ctx.requestInfo)), {
      legacy: 'reject',
      bus: new CatalogBus(service),
    });
  }

  private get dispatcher(): Dispatcher {
    return this.service.dispatcher;
  }

  /** A fresh SDK server for one request (or one stdio connection) of the binding. */
  serverFor(binding: ModernBinding | undefined): Server {
    const server = new Server(
      { name: 'tool-dispatch', version: this.service.version },
      {
        capabilities: this.service.tasks
          ? { ...SERVER_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } }
          : SERVER_CAPABILITIES,
        instructions: INSTRUCTIONS,
      },
    );
    if (!binding) return server; // a subscriptions/listen: capabilities only
    server.setRequestHandler('tools/list', async () => {
      this.service.hooks.request?.('tools/list');
      const view = await this.inSession(binding, () => this.dispatcher.toolsFor(binding.session));
      return { tools: mcpToolsOf(view.tools, await this.dispatcher.catalog()) } as never;
    });
    server.setRequestHandler('tools/call', async (request, ctx) => {
      this.service.hooks.request?.('tools/call');
      const call = () => this.call(binding, request.params, ctx);
      const hook = this.service.hooks.call;
      const info = { mcpSession: '', session: binding.session, method: 'tools/call', tool: request.params.name };
      return (hook ? hook.call(this.service.hooks, info, call) : call()) as Promise<never>;
    });
    const tasks = this.service.tasks;
    if (tasks)
      registerTasksExt(server, tasks, {
        owner: binding.principal,
        capabilities: (ctx) => capabilitiesOf(ctx as ServerContext),
      });
    return server;
  }

  private async call(
    binding: ModernBinding,
    params: {
      name: string;
      arguments?: Record<string, unknown> | undefined;
      _meta?: Record<string, unknown> | undefined;
    },
    ctx: ServerContext,
  ): Promise<Record<string, unknown>> {
    const envelope = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
    const caps = envelope[CLIENT_CAPABILITIES_META_KEY] as Record<string, unknown> | undefined;
    const state = ctx.mcpReq.requestState<unknown>();
    const scope = `td-2026:${binding.session}`;
    try {
      const tasks = this.service.tasks;
      // (v1.3) A client with the tasks extension: a call that waits or runs long is answered as a task.
      if (tasks && declaresTasks(caps) && state === undefined)
        return await this.inSession(binding, async () => {
          const run = `mcp-${await this.service.sessions.currentRun(binding.session, this.runIdleMs)}`;
          const ids = callIdsOf(params._meta, run, () => `mcp-${randomUUID()}`);
          const call = {
            owner: binding.principal,
            session: binding.session,
            ids,
            name: params.name,
            args: params.arguments ?? {},
          };
          return callMaybeTask(tasks, call, { signal: ctx.mcpReq.signal, watch: (x, on) => this.service.watch(x, on) });
        });
      return await this.inSession(binding, () =>
        runModernCall(this.dispatcher, {
          session: binding.session,
          principal: binding.principal,
          name: params.name,
          args: params.arguments ?? {},
          meta: params._meta,
          canAsk: caps?.elicitation !== undefined,
          requestState: typeof state === 'string' ? state : undefined,
          inputResponses: ctx.mcpReq.inputResponses,
          currentRun: async () => `mcp-${await this.service.sessions.currentRun(binding.session, this.runIdleMs)}`,
          signal: ctx.mcpReq.signal,
          notify: (n) => ctx.mcpReq.notify(n as never),
          watch: (session, onEvent) => this.service.watch(session, onEvent),
          hold: (key, cancel) => this.service.hold(scope, key, cancel),
          cancelEverywhere: (key) => this.service.sessions.cancel({ mcpSession: scope, requestId: key }),
        }),
      );
    } catch (e) {
      if (e instanceof McpCallError) throw new ProtocolError(e.code, e.message);
      throw e;
    }
  }

  /** Runs `fn` in the binding's session, making `mcp-<token name>` first when it does not exist yet. */
  private async inSession<T>(binding: ModernBinding, fn: () => Promise<T>): Promise<T> {
    if (!binding.create || this.known.has(binding.session)) {
      try {
        return await fn();
      } catch (e) {
        // Dropped since (TD_SESSION_TTL_MS, a DELETE): made again below.
        if (!(binding.create && e instanceof RequestError && e.code === 'session_not_found')) throw e;
        this.known.delete(binding.session);
      }
    }
    const tenant = binding.create.tenant;
    const existing = await this.dispatcher.getSession(binding.session);
    if (existing && tenant !== undefined && existing.tenant !== tenant)
      throw new ProtocolError(
        -32602,
        `session ${binding.session} belongs to another tenant; name a session of yours with ?session=`,
      );
    if (!existing)
      await this.dispatcher.putSession(binding.session, { provider: 'mcp', ...(tenant ? { tenant } : {}) });
    if (this.known.size >= MAX_KNOWN_SESSIONS) this.known.clear();
    this.known.add(binding.session);
    return fn();
  }

  /**
   * A POST /mcp as the SDK's entry sees it (the body goes separately, parsed), and whether the SDK
   * routes it to the 2026 path (its own classification: a 2025 request carries no `_meta` envelope).
   */
  async classify(request: FastifyRequest, res: ServerResponse, body: unknown): Promise<Request | undefined> {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(request.headers))
      if (typeof v === 'string') headers.set(k, v);
      else if (Array.isArray(v)) headers.set(k, v.join(', '));
    const web = new Request(`http://${request.headers.host ?? 'localhost'}${request.url}`, {
      method: 'POST',
      headers,
      signal: gone.signal,
    });
    // A request with the envelope's version claim is the 2026 path's, whatever else it says (the SDK routes it so too).
    if (hasEnvelopeClaim(body)) return web;
    return (await isLegacyRequest(web, body)) ? undefined : web;
  }

  /** One 2026 POST /mcp: the SDK's entry answers it; its Response goes out on the Node response. */
  async serve(web: Request, res: ServerResponse, body: unknown, binding: ModernBinding): Promise<void> {
    this.bindings.set(web, binding);
    const response = await this.handler.fetch(web, { parsedBody: body });
    await writeResponse(response, res);
  }

  async close(): Promise<void> {
    await this.handler.close();
  }
}

/** Whether a body is one JSON-RPC message whose `_meta` claims a protocol version (the 2026 envelope). */
function hasEnvelopeClaim(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  return typeof meta === 'object' && meta !== null && meta[PROTOCOL_VERSION_META_KEY] !== undefined;
}

/** A web Response written to the Node response: one body at once, or a stream as it comes. */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const head: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    head[k] = v;
  });
  if (!response.body) {
    res.writeHead(response.status, head).end();
    return;
  }
  if (!/text\/event-stream/.test(head['content-type'] ?? '')) {
    const bytes = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...head, 'content-length': String(bytes.length) }).end(bytes);
    return;
  }
  res.writeHead(response.status, { ...head, 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // The client went away: the SDK's exchange was cancelled with it.
  }
  res.end();
}

/**
 * The change events `subscriptions/listen` streams hear: the catalog compared while one is open
 * (the same poll as the 2025 listening streams), `tools_list_changed` when a tool comes, goes or
 * changes.
 */
class CatalogBus implements ServerEventBus {
  private readonly inner = new InMemoryServerEventBus();
  private remove: (() => void) | undefined;
  private listening = 0;

  constructor(private readonly service: McpService) {}

  publish(event: ServerEvent): void {
    this.inner.publish(event);
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    const off = this.inner.subscribe(listener);
    this.listening += 1;
    this.remove ??= this.service.addListener({
      mcpSession: '',
      notify: () => this.inner.publish({ kind: 'tools_list_changed' }),
      end: () => undefined,
    });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      off();
      this.listening -= 1;
      if (this.listening === 0) {
        this.remove?.();
        this.remove = undefined;
      }
    };
  }
}

/** A 2026 request's client capabilities, from its `_meta` envelope. */
function capabilitiesOf(ctx: ServerContext): Record<string, unknown> | undefined {
  const envelope = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  return envelope[CLIENT_CAPABILITIES_META_KEY] as Record<string, unknown> | undefined;
}
