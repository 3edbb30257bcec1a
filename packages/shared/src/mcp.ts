import { createHash } from 'node:crypto';

/** Longest catalog name (API.md): longer MCP names keep their first 55 characters and a hash suffix. */
const MAX_TOOL_NAME = 64;
const KEPT_PREFIX = 55;

/** Server names of TD_MCP_CONFIG (API.md). */
export const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * The catalog name of an MCP server's tool (API.md "MCP servers"): `mcp__<server>__<tool>`, the
 * tool's characters outside `[A-Za-z0-9_-]` made `_`; past 64 characters, its first 55, `_` and
 * the first 8 hex digits of the SHA-256 of the whole name after that substitution.
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/gu, '_')}`;
  if (full.length <= MAX_TOOL_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, KEPT_PREFIX)}_${hash}`;
}

/** Whether a catalog name is an MCP tool's (`mcp__<server>__<tool>`). */
export function isMcpToolName(name: string): boolean {
  return name.startsWith('mcp__');
}

/**
 * An MCP server's tool as a worker announces it: the catalog definition (under its catalog name)
 * with where it comes from and the flags the operator's config and the server's annotations give.
 */
export interface AnnouncedTool {
  /** The catalog name (mcpToolName). */
  name: string;
  description: string;
  /** The server's `inputSchema`. */
  parameters: Record<string, unknown>;
  /** The server's name in TD_MCP_CONFIG. */
  server: string;
  /** The tool's own name on the server. */
  tool: string;
  /** The operator flagged the server or this tool `confirm`. */
  confirm: boolean;
  /** The server's `timeoutMs` (absent: the default deadline). */
  timeoutMs?: number;
  /**
   * A repeat with the same args may return the earlier result: only tools the server says are
   * read-only or idempotent (MCP's defaults are neither).
   */
  dedupe: boolean;
  /** The server's own annotations of the tool (readOnlyHint, destructiveHint, ...), passed on to MCP clients of `/mcp`. */
  annotations?: Record<string, unknown>;
}

/** An MCP server's state on one worker (WorkerAnnouncement.mcp, the td_mcp_servers_up metric). */
export interface McpServerStatus {
  server: string;
  state: 'connecting' | 'up' | 'down';
  /** Tools of its last listing (kept, and still announced, while it is down). */
  tools: number;
  /** Why it is down (the last connection error or how the connection ended). */
  error?: string;
  /** When it entered this state (ms since the epoch). */
  since: number;
}

const ELICIT_ACTIONS = new Set(['accept', 'decline', 'cancel']);

/** Why a posted answer cannot be an elicitation's (`{action, content?}`), or undefined when it can. */
export function elicitationAnswerProblem(output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null || Array.isArray(output))
    return 'an elicitation is answered with {"output": {"action": "accept" | "decline" | "cancel", "content"?: {...}}}';
  const o = output as Record<string, unknown>;
  if (typeof o.action !== 'string' || !ELICIT_ACTIONS.has(o.action))
    return `an elicitation's answer needs "action": "accept", "decline" or "cancel", not ${JSON.stringify(o.action)}`;
  if (o.content !== undefined && (typeof o.content !== 'object' || o.content === null || Array.isArray(o.content)))
    return 'an elicitation\'s "content" must be an object of the requested fields';
  if (o.action !== 'accept' && o.content !== undefined) return `"content" goes with "action": "accept" only`;
  return undefined;
}
