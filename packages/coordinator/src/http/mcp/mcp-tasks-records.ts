/**
 * (v1.3) An MCP task as the store keeps it (API.md "MCP tasks"): the task id names a stored round
 * (a round of one call) and who made it. The round is the task's state and answer; this record
 * only binds the id to it, to the token that made it, and to how long it is kept.
 */
export interface McpTaskRecord {
  taskId: string;
  /** The token's name (TD_API_TOKENS; the open principal without tokens): another token's request finds nothing. */
  owner: string;
  session: string;
  run: string;
  round: string;
  callId: string;
  /** The wire it was made on: the 2025-11-25 utility or the 2026 extension. */
  form: '2025-11-25' | 'ext';
  /** How long it is kept after it ends (the client's ttl, capped at TD_ROUND_RETENTION_MS). */
  ttlMs: number;
  pollMs: number;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms the round was seen ended (absent while it runs). */
  endedAt?: number;
}

/** One page of a token's tasks, newest last. */
export interface McpTaskPage {
  records: McpTaskRecord[];
  nextCursor?: string;
}

/**
 * The MCP tasks' seam (implementations picked in `app/`: memory for embedded and `tool-dispatch
 * mcp`, Redis otherwise), so any coordinator answers for any task. A record lives until `ttlMs`
 * after `ended`, or `maxAgeMs` after it was made when nobody saw it end.
 */
export interface McpTaskRecords {
  /** Stored before it resolves (a `tasks/get` on any coordinator finds it). */
  put(record: McpTaskRecord, maxAgeMs: number): Promise<void>;
  get(taskId: string): Promise<McpTaskRecord | null>;
  /** The round ended at `at`: the record is kept `ttlMs` from then (the first call wins). */
  ended(taskId: string, at: number): Promise<void>;
  /** The owner's tasks still kept, oldest first, `limit` a page. */
  list(owner: string, cursor: string | undefined, limit: number): Promise<McpTaskPage>;
  close(): Promise<void>;
}
