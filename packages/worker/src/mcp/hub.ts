import { type AnnouncedTool, type Handler, isMcpToolName, type McpServerStatus } from '@tool-dispatch/shared';
import type { McpServerConfig } from './config.js';
import { type Backoff, type CallStatus, McpServerLink } from './link.js';

/** A listener of MCP calls' ends (metrics). */
export type CallListener = (server: string, tool: string, status: CallStatus) => void;

export interface McpHubOptions {
  servers: readonly McpServerConfig[];
  /** Our client's name and version in `initialize`. */
  clientInfo?: { name: string; version: string };
  log?: (line: string) => void;
  backoff?: Backoff;
}

/**
 * A process's MCP servers (TD_MCP_CONFIG): one supervised link each. It is a handler source for
 * the worker's registry (a catalog name → a call on its server), and what the worker announces:
 * every server's tools and states. `onChange` listeners hear of every change of either.
 */
export class McpHub {
  private readonly links: McpServerLink[];
  private readonly listeners = new Set<() => void>();
  private readonly callListeners = new Set<CallListener>();
  private announcedCache: AnnouncedTool[] | undefined;
  private readonly handlers = new Map<string, Handler>();

  constructor(options: McpHubOptions) {
    const log = options.log ?? (() => {});
    const clientInfo = options.clientInfo ?? { name: 'tool-dispatch', version: '0.1.0' };
    this.links = options.servers.map(
      (config) =>
        new McpServerLink({
          config,
          clientInfo,
          log,
          onChange: () => this.changed(),
          onCall: (tool, status) => {
            for (const listener of this.callListeners) listener(config.name, tool, status);
          },
          ...(options.backoff ? { backoff: options.backoff } : {}),
        }),
    );
  }

  /** Connects to every server; resolves once each has made its first attempt (up, or down and retrying). */
  async start(): Promise<void> {
    await Promise.all(this.links.map((l) => l.start()));
  }

  /** Every server's tools, by catalog name; the same array until something changes. */
  tools(): AnnouncedTool[] {
    this.announcedCache ??= this.links.flatMap((l) => l.announced()).sort((a, b) => a.name.localeCompare(b.name));
    return this.announcedCache;
  }

  status(): McpServerStatus[] {
    return this.links.map((l) => l.status());
  }

  /** Catalog names of the servers' tools (HandlerRegistry source). */
  names(): string[] {
    return this.tools().map((t) => t.name);
  }

  /** The handler of a catalog name: a call of that tool on its server (HandlerRegistry source). */
  get(name: string): Handler | undefined {
    const known = this.handlers.get(name);
    if (known) return known;
    const found = this.linkOf(name);
    if (!found) return undefined;
    const { link, tool } = found;
    const handler: Handler = (args, ctx) => link.call(tool, args, ctx);
    this.handlers.set(name, handler);
    return handler;
  }

  /**
   * While a server is still on its first connection (this worker just started), a promise of
   * those first attempts for an MCP tool name no listing has yet (HandlerSource): a call that
   * reaches this worker first waits for them instead of failing.
   */
  pending(name: string): Promise<void> | undefined {
    if (!isMcpToolName(name)) return undefined;
    const first = this.links.flatMap((l) => l.firstAttempt() ?? []);
    return first.length === 0 ? undefined : Promise.all(first).then(() => undefined);
  }

  /** An MCP tool's execute span names its server and its name there (`mcp.server`, `mcp.tool.name`). */
  spanAttributes(name: string): Record<string, string> | undefined {
    const found = this.linkOf(name);
    return found ? { 'mcp.server': found.link.name, 'mcp.tool.name': found.tool } : undefined;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hears of every call's end: its server, its tool (by its name on the server) and how it ended. */
  onCall(listener: CallListener): () => void {
    this.callListeners.add(listener);
    return () => this.callListeners.delete(listener);
  }

  async close(): Promise<void> {
    await Promise.all(this.links.map((l) => l.close()));
  }

  /** The server whose last listing has a catalog name, and the tool's name there. */
  private linkOf(name: string): { link: McpServerLink; tool: string } | undefined {
    for (const link of this.links) {
      const tool = link.toolOf(name);
      if (tool !== undefined) return { link, tool };
    }
    return undefined;
  }

  private changed(): void {
    this.announcedCache = undefined;
    this.handlers.clear();
    for (const listener of this.listeners) listener();
  }
}
