/** An MCP session (Streamable HTTP's `Mcp-Session-Id`) as every coordinator finds it in the store. */
export interface McpSessionRecord {
  /** The MCP session id. */
  id: string;
  /** The tool-dispatch session it acts in (`mcp-<id>`, or the one `?session=` named). */
  session: string;
  /** The client declared the `elicitation` capability: approvals and questions are asked of it. */
  elicitation: boolean;
  /** The protocol version initialize agreed. */
  protocolVersion: string;
  /** Epoch ms of its initialize. */
  createdAt: number;
}

/** What a cancel names: one tools/call of an MCP session (by its JSON-RPC id), or all of them. */
export interface McpCancel {
  mcpSession: string;
  /** The JSON-RPC id of the tools/call; absent: every call of the MCP session in flight (DELETE /mcp). */
  requestId?: string | number;
}

/**
 * The MCP server's seam (its implementations are picked in `app/`): MCP sessions in the store so
 * any coordinator serves any request of one, and cancels heard by every coordinator (a
 * `notifications/cancelled` or `DELETE /mcp` may land on another coordinator than the call).
 */
export interface McpSessions {
  create(record: McpSessionRecord): Promise<void>;
  get(id: string): Promise<McpSessionRecord | null>;
  /** Whether it existed. */
  delete(id: string): Promise<boolean>;
  /** Sends a cancel to every coordinator (this one too). */
  cancel(cancel: McpCancel): Promise<void>;
  /**
   * (2026-07-28) The number n of a session's current run `mcp-<n>`: the same n while calls come
   * less than `idleMs` apart, the next one once `idleMs` passed without a call; each call renews
   * it. Held in the store, so every coordinator agrees.
   */
  currentRun(session: string, idleMs: number): Promise<number>;
  /** Hears the cancels of every coordinator; returns the unsubscribe function. */
  onCancel(listener: (cancel: McpCancel) => void): Promise<() => void>;
  close(): Promise<void>;
}
