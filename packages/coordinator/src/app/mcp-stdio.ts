import { randomUUID } from 'node:crypto';
import { LATEST_PROTOCOL_VERSION, type Server, type Transport } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import type { DispatchConfig } from '@tool-dispatch/shared';
import type { McpHub } from '@tool-dispatch/worker';
import type { Engine } from '../engine.js';
import { ModernMcp } from '../http/mcp/mcp-2026.js';
import { answeredBy } from '../http/mcp/mcp-mapping.js';
import { type McpHooks, McpService } from '../http/mcp/mcp-service.js';
import type { McpSessionRecord, McpSessions } from '../http/mcp/mcp-sessions.js';
import { createDistributedEngine } from './distributed.js';
import { createEngine } from './embedded.js';
import { MemoryMcpSessions } from './mcp-sessions.js';

export interface McpStdioOptions {
  config: DispatchConfig;
  /** An existing session to act in (else a new `mcp-<id>` of provider mcp). */
  session?: string;
  version: string;
  /** Operator lines: stderr (stdout carries the protocol). */
  log: (line: string) => void;
  /** The MCP servers behind the dispatcher (embedded: this process connects to them). */
  mcp?: McpHub;
  hooks?: McpHooks;
}

type Message = Record<string, unknown>;

/**
 * `tool-dispatch mcp`: the MCP server over stdio for clients that launch a local process (API.md
 * "MCP server"). Embedded, or a coordinator of the deployment when REDIS_URL or
 * REDIS_CLUSTER_NODES is set. One MCP session for the connection; the same SDK server and
 * handlers as /mcp. Resolves once stdin closes and everything is shut.
 */
export async function runMcpStdio(o: McpStdioOptions): Promise<void> {
  const { engine, sessions, release } = await engineFor(o);
  const service = new McpService({
    dispatcher: engine,
    sessions,
    version: o.version,
    runIdleMs: o.config.mcpRunIdleMs,
    ...(o.hooks ? { hooks: o.hooks } : {}),
  });
  await service.start();
  const id = randomUUID();
  const session = o.session ?? `mcp-${id}`;
  if (o.session === undefined) await engine.putSession(session, { provider: 'mcp' });
  else if (!(await engine.getSession(session)))
    throw new Error(`session ${session} does not exist; create it with PUT /v1/sessions/${session} first`);
  const stdio = new StdioServerTransport();
  const base: McpSessionRecord = {
    id,
    session,
    elicitation: false,
    protocolVersion: LATEST_PROTOCOL_VERSION,
    createdAt: Date.now(),
  };
  await sessions.create(base);
  const transport = interceptClientMessages(stdio, service, base);
  const modern = new ModernMcp(service, o.config.mcpRunIdleMs);
  // The connection's first message picks the era: 2025 (initialize) or 2026-07-28 (server/discover, or a request with the _meta envelope).
  const handle = serveStdio(
    (ctx) => {
      if (ctx.era === 'modern') return modern.serverFor({ session, principal: 'stdio' });
      const server: Server = service.serverFor(
        () => ({ ...base, elicitation: server.getClientCapabilities()?.elicitation !== undefined }),
        () => transport,
      );
      return server;
    },
    { transport },
  );
  const removeListener = service.addListener({
    mcpSession: id,
    notify: (m) => void stdio.send(m as never).catch(() => undefined),
    end: () => undefined,
  });
  o.log(`tool-dispatch mcp: serving session ${session} over stdio (${o.config.mode} mode)`);
  await new Promise<void>((resolve) => {
    stdio.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  removeListener();
  await handle.close().catch(() => undefined);
  await service.end(base);
  await service.close();
  await engine.drain();
  await sessions.close();
  await engine.close();
  await release();
}

/**
 * The stdio transport as the SDK's entry sees it: the client's answers to the dispatcher's 2025
 * elicitations go to the confirm and input hubs (no SDK server sent them) and its cancels to the
 * call they name; everything else to the entry (and the server it pinned).
 */
function interceptClientMessages(
  inner: StdioServerTransport,
  service: McpService,
  record: McpSessionRecord,
): Transport {
  const outer: Transport = {
    start: () => inner.start(),
    send: (message) => inner.send(message),
    close: () => inner.close(),
  };
  inner.onmessage = (message) => {
    const m = message as Message;
    if (m.method === undefined && answeredBy(m.id)) {
      void service.answered(record, m);
      return;
    }
    if (m.method === 'notifications/cancelled') void service.notified(record, m);
    outer.onmessage?.(message);
  };
  inner.onerror = (e) => outer.onerror?.(e);
  const closed = inner.onclose;
  inner.onclose = () => {
    closed?.();
    outer.onclose?.();
  };
  return outer;
}

async function engineFor(
  o: McpStdioOptions,
): Promise<{ engine: Engine; sessions: McpSessions; release: () => Promise<void> }> {
  if (o.config.mode === 'embedded') {
    const engine = await createEngine({ config: o.config, log: o.log, ...(o.mcp ? { mcp: o.mcp } : {}) });
    return { engine, sessions: new MemoryMcpSessions(), release: async () => o.mcp?.close() };
  }
  const built = await createDistributedEngine(o.config, { log: o.log });
  return { engine: built.engine, sessions: built.mcpSessions, release: built.release };
}
