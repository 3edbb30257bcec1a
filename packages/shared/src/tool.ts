/** A tool definition as clients send and see it (API.md ToolDefinition). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  concurrency?: 'concurrent' | 'serial';
  confirm?: boolean;
  /** Deadline in ms for one execution (default 60 s). Beyond API.md. */
  timeoutMs?: number;
  /** Interactive tools ask a person something; they always run serially and are never deduped. */
  interactive?: boolean;
}

export type ToolKind = 'builtin' | 'user' | 'mcp' | 'client';

/** A catalog entry: the definition with every flag resolved. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  kind: ToolKind;
  concurrency: 'concurrent' | 'serial';
  /** Calls may need approval (http_request: those not GET). */
  confirm: boolean;
  /** Left out of the tools array of providers other than claude-code. */
  deferred: boolean;
  /** Results go to the 30-minute result cache (http_request: GET without credentials). */
  cacheable: boolean;
  /** A repeat with the same args may return the earlier result. */
  dedupe: boolean;
  interactive: boolean;
  timeoutMs: number;
  /** An MCP tool's server (TD_MCP_CONFIG name). */
  server?: string;
  /** An MCP tool's annotations as its server gave them (shown to MCP clients of `/mcp`). */
  annotations?: Record<string, unknown>;
}

/** The neutral shape of a tool in a model's tools array. */
export interface NeutralTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}
