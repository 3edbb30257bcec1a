// long-file: one supervised connection (connect, calls in turn, reconnect, the sandboxed launch) reads as one class
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  type AnnouncedTool,
  type HandlerContext,
  type McpServerStatus,
  mcpToolName,
  schemaProblem,
  ToolError,
} from '@tool-dispatch/shared';
import { mcpServerSandbox } from '../sandbox/default.js';
import type { PreparedLaunch, Sandbox } from '../sandbox/sandbox.js';
import { abortError } from '../support/abort.js';
import { errorMessage } from '../support/node-error.js';
import type { McpSandbox, McpServerConfig, McpStdioServer } from './config.js';
import { answerElicitation, type ElicitAnswer, elicitationArgs } from './elicitation.js';
import { type McpCallResult, mcpOutputOf, mcpTextOf } from './output.js';
import { Turns } from './turns.js';

/** Where an MCP tool call's `_meta` carries the call's idempotency key (API.md "keys for side effects"). */
export const IDEMPOTENCY_META = 'tool-dispatch/idempotencyKey';

/** How a link reconnects: the first retry after `initialMs`, doubling up to `maxMs`. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 250, maxMs: 5_000 };
/** Connecting (spawn, initialize, the first tools/list) gives up after this. */
const CONNECT_TIMEOUT_MS = 20_000;
/** The SDK's own request timeout is set past the call's deadline: the deadline (ours) is what stops a call. */
const SDK_TIMEOUT_SLACK_MS = 5_000;
/** Kept of a stdio server's stderr, to say why it exited. */
const STDERR_TAIL_BYTES = 2_000;

export interface McpLinkOptions {
  config: McpServerConfig;
  /** Our client's name and version in `initialize`. */
  clientInfo: { name: string; version: string };
  log: (line: string) => void;
  /** Called when the server's tools or its state change (the worker announces again). */
  onChange: () => void;
  backoff?: Backoff;
  /** Called as each call ends, with its tool (by its name on the server) and how it ended. */
  onCall?: (tool: string, status: CallStatus) => void;
  /** The sandbox of a server with `"sandbox"` (default: the process's, mcpServerSandbox). */
  sandbox?: () => Promise<Sandbox>;
}

/** How an MCP call ended, for metrics. */
export type CallStatus = 'ok' | 'error' | 'timeout' | 'cancelled';

/** One listed tool: its name on the server and what the catalog gets. */
interface LinkedTool {
  tool: string;
  announced: AnnouncedTool;
}

/**
 * A worker's connection to one MCP server, supervised (DESIGN.md "MCP tools"): it connects,
 * lists every page of the server's tools and keeps them (a `list_changed` lists them again); a
 * dead stdio child or a dropped HTTP connection fails the call in flight and every call after
 * it at once, naming the server, while it reconnects (restarting a stdio server) with capped
 * exponential backoff, re-initialises and lists again. Calls run one at a time: an elicitation
 * the server sends during a call carries no reference to it, so the one call in flight is the
 * one asking.
 */
export class McpServerLink {
  readonly name: string;
  private client: Client | undefined;
  private state: McpServerStatus['state'] = 'connecting';
  private since = Date.now();
  private lastError: string | undefined;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  private connecting: Promise<void> | undefined;
  private tools = new Map<string, LinkedTool>();
  private readonly turns = new Turns();
  /** The call in flight: whom an elicitation asks. */
  private current: HandlerContext | undefined;
  private stderrTail = '';
  /** Frees the running sandboxed server's sandbox and working directory. */
  private sandboxRelease: (() => Promise<void>) | undefined;
  /** Refusals logged already (a list_changed lists the same tools again). */
  private readonly refusalsLogged = new Set<string>();
  private readonly backoff: Backoff;

  constructor(private readonly options: McpLinkOptions) {
    this.name = options.config.name;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  /** Starts connecting; resolves after the first attempt (up, or down and retrying). */
  start(): Promise<void> {
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** While the first connection is under way: its attempt, which settles up, or down and retrying. */
  firstAttempt(): Promise<void> | undefined {
    return this.state === 'connecting' && !this.closed ? this.start() : undefined;
  }

  /** The catalog entries of the last listing (kept while the server is down: its calls then fail fast, naming it). */
  announced(): AnnouncedTool[] {
    return [...this.tools.values()].map((t) => t.announced);
  }

  /** The server's name on this server of a catalog name, if the last listing had it. */
  toolOf(catalogName: string): string | undefined {
    return this.tools.get(catalogName)?.tool;
  }

  status(): McpServerStatus {
    return {
      server: this.name,
      state: this.state,
      tools: this.tools.size,
      since: this.since,
      ...(this.lastError !== undefined && this.state !== 'up' ? { error: this.lastError } : {}),
    };
  }

  /**
   * Calls a tool of this server: its result as `{content, structuredContent?}` (cut to the limit
   * of a result), an `isError` result as a `handler_error` with its text. `ctx.signal` (deadline,
   * cancel) reaches the server as MCP cancellation, and the server stays connected.
   */
  async call(tool: string, args: Record<string, unknown>, ctx: HandlerContext): Promise<unknown> {
    let status: CallStatus = 'error';
    try {
      const output = await this.callInTurn(tool, args, ctx);
      status = 'ok';
      return output;
    } catch (e) {
      if (e instanceof ToolError && (e.code === 'timeout' || e.code === 'cancelled')) status = e.code;
      throw e;
    } finally {
      this.options.onCall?.(tool, status);
    }
  }

  private async callInTurn(tool: string, args: Record<string, unknown>, ctx: HandlerContext): Promise<unknown> {
    let release: () => void;
    try {
      release = await this.turns.take(ctx.signal);
    } catch {
      throw abortError(ctx.signal, `it waited for its turn on MCP server "${this.name}"`);
    }
    try {
      const client = this.client;
      if (this.state !== 'up' || !client) throw this.downError();
      this.current = ctx;
      const result = (await client.callTool(
        { name: tool, arguments: args, _meta: { [IDEMPOTENCY_META]: ctx.idempotencyKey } },
        { signal: ctx.signal, timeout: ctx.timeoutMs + SDK_TIMEOUT_SLACK_MS },
      )) as McpCallResult;
      if (result.isError === true) {
        const text = mcpTextOf(result);
        throw new ToolError(
          'handler_error',
          text || `MCP server "${this.name}": ${tool} reported an error with no text`,
          {
            content: Array.isArray(result.content) ? result.content : [],
          },
        );
      }
      return mcpOutputOf(result);
    } catch (e) {
      throw this.callFailure(e, tool, ctx, this.client);
    } finally {
      this.current = undefined;
      release();
    }
  }

  /** Stops the link: no more reconnects; the connection (a stdio child) is closed. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
    await this.releaseSandbox();
  }

  /** What a failed call becomes: its own ToolError, a stop (deadline or cancel), or a lost connection naming the server. */
  private callFailure(e: unknown, tool: string, ctx: HandlerContext, client: Client | undefined): unknown {
    if (e instanceof ToolError) return e;
    if (ctx.signal.aborted) return abortError(ctx.signal, `MCP server "${this.name}" was sent notifications/cancelled`);
    if (e instanceof ProtocolError)
      return new ToolError('handler_error', `MCP server "${this.name}" refused ${tool}: ${e.message}`);
    // Anything else is the connection's (closed, a send failed, an HTTP error): the link is lost.
    if (client && client === this.client) this.lost(errorMessage(e), client);
    return new ToolError(
      'handler_error',
      `MCP server "${this.name}" failed during ${tool}: ${errorMessage(e)}; reconnecting`,
    );
  }

  private downError(): ToolError {
    const why = this.lastError ? `: ${this.lastError}` : '';
    const state = this.state === 'connecting' ? 'is not connected yet' : 'is down';
    return new ToolError(
      'handler_error',
      `MCP server "${this.name}" ${state}${why}; the worker is reconnecting with backoff`,
    );
  }

  // long: one connection attempt reads as one story — transport, handlers, initialize, listing, and the way out on failure.
  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client(this.options.clientInfo, {
      // No roots: a server keeps the directories its own command line gives it (API.md).
      capabilities: { elicitation: {} },
      listChanged: {
        tools: {
          onChanged: (error, tools) => {
            if (client !== this.client) return;
            if (error) this.options.log(`mcp ${this.name}: cannot list its tools after list_changed: ${error.message}`);
            else if (tools) this.setTools(tools);
          },
        },
      },
    });
    client.setRequestHandler('elicitation/create', async (request, extra) => {
      const answer = await answerElicitation(this.current, elicitationArgs(request.params), extra.mcpReq.signal);
      // The fields' values are the person's, checked by the server against its requestedSchema.
      return answer as {
        action: ElicitAnswer['action'];
        content?: Record<string, string | number | boolean | string[]>;
      };
    });
    client.onclose = () => {
      if (client === this.client)
        this.lost('the connection closed (a stdio server exited, or an HTTP session ended)', client);
    };
    client.onerror = (e: Error) => {
      this.lastError = e.message;
    };
    this.stderrTail = '';
    try {
      await client.connect(await this.transport(), { timeout: CONNECT_TIMEOUT_MS });
      const listed = await client.listTools(undefined, { timeout: CONNECT_TIMEOUT_MS });
      if (this.closed) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = client;
      this.attempt = 0;
      this.lastError = undefined;
      this.setState('up');
      this.setTools(listed.tools);
      this.options.log(`mcp ${this.name}: connected, ${this.tools.size} tools`);
    } catch (e) {
      await client.close().catch(() => undefined);
      this.failed(this.exitReason(errorMessage(e)));
    }
  }

  private async transport(): Promise<Transport> {
    const c = this.options.config;
    if (c.transport === 'http')
      return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
    const spawned = c.sandbox ? await this.sandboxed(c, c.sandbox) : undefined;
    const transport = new StdioClientTransport(
      spawned
        ? { command: spawned.command, args: spawned.args, env: spawned.env, cwd: spawned.cwd, stderr: 'pipe' }
        : {
            command: c.command,
            args: c.args,
            env: { ...getDefaultEnvironment(), ...c.env },
            ...(c.cwd ? { cwd: c.cwd } : {}),
            stderr: 'pipe',
          },
    );
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    return transport;
  }

  /**
   * A sandboxed server's launch (API.md v1.3 "MCP servers"): a fresh private working directory
   * and sandbox per start; the previous one's are freed first (a restart is a new sandbox).
   */
  private async sandboxed(c: McpStdioServer, box: McpSandbox): Promise<PreparedLaunch & { cwd: string }> {
    await this.releaseSandbox();
    const sandbox = await (this.options.sandbox ?? mcpServerSandbox)();
    const workdir = await mkdtemp(path.join(tmpdir(), `td-mcp-${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}-`));
    try {
      const prepared = await sandbox.prepare({
        argv: [c.command, ...c.args],
        workdir,
        read: box.read,
        net: box.net,
        stdin: 'pipe',
        env: c.env,
      });
      this.sandboxRelease = async () => {
        await prepared.release();
        await rm(workdir, { recursive: true, force: true });
      };
      return { ...prepared, cwd: workdir };
    } catch (e) {
      await rm(workdir, { recursive: true, force: true });
      throw e;
    }
  }

  private async releaseSandbox(): Promise<void> {
    const release = this.sandboxRelease;
    this.sandboxRelease = undefined;
    await release?.().catch(() => undefined);
  }

  /** A failed connect's reason, with the last line a stdio server wrote to stderr when there is one. */
  private exitReason(reason: string): string {
    const last = this.stderrTail.trim().split('\n').at(-1)?.trim();
    return last ? `${reason} (its stderr: ${last.slice(0, 300)})` : reason;
  }

  /** The connection ended while up: fail fast from now on and reconnect. */
  private lost(reason: string, client: Client): void {
    if (client !== this.client) return;
    this.client = undefined;
    client.close().catch(() => undefined);
    this.failed(reason);
  }

  /** Down: say so once per distinct reason, and try again after the backoff. */
  private failed(reason: string): void {
    if (this.closed) return;
    if (reason !== this.lastError || this.state === 'up')
      this.options.log(`mcp ${this.name}: down (${reason}); retrying in ${this.delay()} ms`);
    this.lastError = reason;
    this.setState('down');
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      this.attempt++;
      this.start().catch(() => undefined);
    }, this.delay());
    this.retry.unref();
  }

  /** The next retry's delay: doubling from `initialMs`, capped at `maxMs`. */
  private delay(): number {
    return Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** Math.min(this.attempt, 20));
  }

  private setState(state: McpServerStatus['state']): void {
    if (state === this.state) return;
    this.state = state;
    this.since = Date.now();
    this.options.onChange();
  }

  /** Takes a listing: each tool under its catalog name; a name taken twice or a schema that does not compile is refused, with a log line. */
  private setTools(tools: readonly Tool[]): void {
    const next = new Map<string, LinkedTool>();
    for (const tool of tools) {
      const problem = this.refusal(tool, next);
      if (problem) {
        const line = `mcp ${this.name}: tool ${JSON.stringify(tool.name)} left out: ${problem}`;
        if (!this.refusalsLogged.has(line)) this.options.log(line);
        this.refusalsLogged.add(line);
        continue;
      }
      next.set(mcpToolName(this.name, tool.name), { tool: tool.name, announced: this.announce(tool) });
    }
    this.tools = next;
    this.options.onChange();
  }

  private refusal(tool: Tool, taken: ReadonlyMap<string, LinkedTool>): string | undefined {
    const name = mcpToolName(this.name, tool.name);
    const other = taken.get(name);
    if (other) return `its catalog name ${name} is taken by the server's tool ${JSON.stringify(other.tool)}`;
    if ((tool as { execution?: { taskSupport?: string } }).execution?.taskSupport === 'required')
      return 'it runs only as an MCP task, which this client does not use';
    const schema = schemaProblem(tool.inputSchema);
    return schema ? `its inputSchema: ${schema}` : undefined;
  }

  private announce(tool: Tool): AnnouncedTool {
    const c = this.options.config;
    const hints = tool.annotations ?? {};
    return {
      name: mcpToolName(this.name, tool.name),
      description: tool.description ?? tool.title ?? '',
      parameters: tool.inputSchema as Record<string, unknown>,
      server: this.name,
      tool: tool.name,
      confirm: c.confirm === true || (Array.isArray(c.confirm) && c.confirm.includes(tool.name)),
      ...(c.timeoutMs !== undefined ? { timeoutMs: c.timeoutMs } : {}),
      dedupe: hints.readOnlyHint === true || hints.idempotentHint === true,
      ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
    };
  }
}
