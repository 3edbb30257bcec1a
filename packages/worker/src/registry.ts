import { type Handler, type HandlerContext, raceAbort, ToolError } from '@tool-dispatch/shared';
import { calculate } from './handlers/calculate.js';
import { downloadFile } from './handlers/download-file.js';
import { editFile } from './handlers/edit-file.js';
import { fetchPage } from './handlers/fetch-page.js';
import { findFiles } from './handlers/find-files.js';
import { httpRequest } from './handlers/http-request.js';
import { readFiles } from './handlers/read-files.js';
import { createRunCommand, runCommand } from './handlers/run-command.js';
import { searchWeb } from './handlers/search-web.js';
import { writeTodo } from './handlers/write-todo.js';
import type { Sandbox } from './sandbox/sandbox.js';
import { abortError } from './support/abort.js';

/** Handlers that come and go (an MCP hub's): asked after the registered ones. */
export interface HandlerSource {
  get(name: string): Handler | undefined;
  names(): string[];
  /** What the `execute <tool>` span of a call of `name` carries besides the call's own attributes (an MCP tool's server). */
  spanAttributes?(name: string): Record<string, string> | undefined;
  /**
   * While the source may still come to know `name` (an MCP server's first connection under
   * way, a worker just started), a promise that settles when it has made up its mind.
   */
  pending?(name: string): Promise<void> | undefined;
}

/** Tool name → handler, for the tools this worker can run. */
export class HandlerRegistry {
  private readonly handlers = new Map<string, Handler>();
  private readonly sources: HandlerSource[] = [];
  private ownNames: readonly string[] | undefined;

  /** Adds a source of handlers (MCP servers' tools); a registered handler wins over a source's. */
  addSource(source: HandlerSource): void {
    this.sources.push(source);
  }

  /** Registers a handler; registering a name twice is a bug and throws. */
  register(name: string, handler: Handler): void {
    if (name === '') throw new Error('a handler needs a tool name');
    if (this.handlers.has(name)) throw new Error(`a handler for ${name} is already registered`);
    this.handlers.set(name, handler);
    this.ownNames = undefined;
  }

  get(name: string): Handler | undefined {
    const own = this.handlers.get(name);
    if (own || this.sources.length === 0) return own;
    for (const source of this.sources) {
      const h = source.get(name);
      if (h) return h;
    }
    return undefined;
  }

  /**
   * The handler a call of `name` runs: `get`'s, or, while a source may still come to know the
   * name (its MCP server's first connection under way), one that waits for that source within
   * the call's deadline and then runs the tool, or fails naming what this worker has not got.
   */
  resolve(name: string): Handler | undefined {
    const found = this.get(name);
    if (found) return found;
    for (const source of this.sources) {
      const pending = source.pending?.(name);
      if (pending) return (args, ctx) => this.afterPending(name, pending, args, ctx);
    }
    return undefined;
  }

  private async afterPending(
    name: string,
    pending: Promise<void>,
    args: Record<string, unknown>,
    ctx: HandlerContext,
  ): Promise<unknown> {
    const { signal } = ctx;
    const waited = `it waited for the first connection of ${name}'s MCP server`;
    // A first attempt that ends down (and retrying) has made up its mind too.
    await raceAbort(
      pending.catch(() => undefined),
      signal,
      () => {
        throw abortError(signal, waited);
      },
    );
    const handler = this.get(name);
    if (!handler)
      throw new ToolError(
        'handler_error',
        `no handler for ${name} on this worker: its MCP servers connected without it`,
      );
    return handler(args, ctx);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** The span attributes a source gives a tool (an MCP tool's `mcp.server`), if any. */
  spanAttributes(name: string): Record<string, string> | undefined {
    if (this.handlers.has(name)) return undefined;
    for (const source of this.sources) {
      const attributes = source.spanAttributes?.(name);
      if (attributes) return attributes;
    }
    return undefined;
  }

  /** Tool names with a handler (registered, then the sources'), sorted; the same array while nothing was registered. */
  names(): readonly string[] {
    // Asked every round: the registered names are sorted once per registration, not per ask.
    this.ownNames ??= [...this.handlers.keys()].sort();
    if (this.sources.length === 0) return this.ownNames;
    return [...new Set([...this.ownNames, ...this.sources.flatMap((s) => s.names())])].sort();
  }
}

/**
 * A registry holding every handler the worker ships (API.md "Built-in tools").
 * find_tools and run_tool are not here: the coordinator answers them itself. run_command runs
 * in `options.sandbox`, else in the process's own (TD_SANDBOX*, probed on first use).
 */
export function createBuiltinRegistry(options: { sandbox?: Sandbox | Promise<Sandbox> } = {}): HandlerRegistry {
  const registry = new HandlerRegistry();
  registry.register('read_files', readFiles);
  registry.register('find_files', findFiles);
  registry.register('edit_file', editFile);
  registry.register('run_command', options.sandbox ? createRunCommand(options.sandbox) : runCommand);
  registry.register('http_request', httpRequest);
  registry.register('fetch_page', fetchPage);
  registry.register('download_file', downloadFile);
  registry.register('search_web', searchWeb);
  registry.register('calculate', calculate);
  registry.register('write_todo', writeTodo);
  return registry;
}
