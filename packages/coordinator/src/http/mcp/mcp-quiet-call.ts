import type { IncomingHttpHeaders } from 'node:http';
import { isJSONRPCRequest, isJsonContentType, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import type { McpSessionRecord } from './mcp-sessions.js';

/** What answers the call: McpService's callTool (its hooks, the dispatcher). */
export interface QuietCaller {
  callTool(
    record: McpSessionRecord,
    params: McpCallParams,
    requestId: string | number,
    transport: undefined,
  ): Promise<Record<string, unknown>>;
}

/** JSON-RPC's internal error, the SDK's answer to a handler that threw without a code. */
const INTERNAL_ERROR = -32603;

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A lone tools/call of a 2025 MCP session that needs nothing but its answer (no elicitation, no
 * progress, no task): answered as the SDK's server answers it on a JSON response (the same body and
 * status: `mcp-quiet-call.test.ts` holds the two equal), without making a `Server` and a transport
 * for it, which were half of `/mcp`'s CPU per call (bench/README.md, "/mcp's quiet calls"). Anything
 * else, and anything the SDK would refuse or shape itself (a batch, headers it answers 406, 415 or
 * 400, params it would reject), is left to the SDK: undefined.
 */
export async function answerQuietCall(
  service: QuietCaller,
  record: McpSessionRecord,
  headers: IncomingHttpHeaders,
  body: unknown,
): Promise<Record<string, unknown> | undefined> {
  if (!isQuietCall(record, headers, body)) return undefined;
  const { id, params } = body as { id: string | number; params: McpCallParams };
  try {
    return { result: await service.callTool(record, params, id, undefined), jsonrpc: '2.0', id };
  } catch (e) {
    // The SDK's Protocol: the error's own code when it has one (-32002 as -32602 on the 2025 wire), else internal.
    const { code, message, data } = e as { code?: unknown; message?: string; data?: unknown };
    const own = typeof code === 'number' && Number.isSafeInteger(code) ? code : INTERNAL_ERROR;
    const error = { code: own === -32002 ? -32602 : own, message: message ?? 'Internal error' };
    return { jsonrpc: '2.0', id, error: data === undefined ? error : { ...error, data } };
  }
}

/** The requests `answerQuietCall` takes: what the SDK's transport and server would pass on unchanged. @internal */
export function isQuietCall(record: McpSessionRecord, headers: IncomingHttpHeaders, body: unknown): boolean {
  if (!isPlain(body) || body.method !== 'tools/call' || !isJSONRPCRequest(body)) return false;
  const params = body.params;
  if (!isPlain(params) || typeof params.name !== 'string' || 'task' in params) return false;
  if (params.arguments !== undefined && !isPlain(params.arguments)) return false;
  if (params._meta !== undefined && !isPlain(params._meta)) return false;
  const accept = headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  if (!isJsonContentType(headers['content-type'] ?? null)) return false;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && !(SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(String(version)))
    return false;
  return isQuiet(record, body);
}

/** A tools/call's params as the dispatcher takes them. */
export interface McpCallParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  _meta?: Record<string, unknown> | undefined;
}

/**
 * Whether nothing goes out before the answer to a POST (the MCP session takes no questions, no
 * request asks for progress with `params._meta.progressToken`): one JSON body, no stream.
 */
export function isQuiet(record: McpSessionRecord, body: unknown): boolean {
  if (record.elicitation) return false;
  return !(Array.isArray(body) ? body : [body]).some((m) => {
    const meta = (m as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
    return meta?.progressToken !== undefined;
  });
}
