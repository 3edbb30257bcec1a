// Span names and attribute keys (DESIGN.md "Observability"): ours (td.*) and OpenTelemetry's semantic conventions.

/** Name of the instrumentation scope every tool-dispatch span is created under. */
export const TRACER_NAME = 'tool-dispatch';

// Span names (DESIGN.md "Observability"): one trace per round.
export const SPAN_ROUND = 'round';
export const SPAN_PREFLIGHT = 'preflight';
export const SPAN_COMMIT = 'commit';
/** The round's wait for a person's answers to its confirmations (the gate), child of `round`. */
export const SPAN_CONFIRM_WAIT = 'confirm wait';
/** A call's wait in pass 2 before it may start (`td.wait.reason`), child of `round`. */
export const SPAN_ADMISSION_WAIT = 'admission wait';
/** A call's time on the queue, from its job's enqueue to its start on a worker (distributed mode). */
export const SPAN_QUEUE_WAIT = 'queue wait';
/** find_tools, answered by the coordinator from the catalog in pass 1: child of `preflight`. */
export const SPAN_FIND_TOOLS = 'find_tools';
/** `execute <tool>`: one per executed call, on the worker (or in-process in embedded mode). */
export function executeSpanName(tool: string): string {
  return `execute ${tool}`;
}

// Our own attributes.
export const ATTR_SESSION = 'td.session';
/** The MCP session (Mcp-Session-Id) and method of a request to /mcp (OpenTelemetry's MCP conventions). */
export const ATTR_MCP_SESSION = 'mcp.session.id';
export const ATTR_MCP_METHOD = 'mcp.method.name';
export const ATTR_RUN = 'td.run';
export const ATTR_ROUND = 'td.round';
export const ATTR_CALL_ID = 'td.call.id';
export const ATTR_STATUS = 'td.status';
export const ATTR_TENANT = 'td.tenant';
/** Number of calls in the round (on `round` and `preflight`). */
export const ATTR_CALL_COUNT = 'td.calls';
export const ATTR_DEDUPE_HIT = 'td.dedupe.hit';
export const ATTR_DEDUPE_HITS = 'td.dedupe.hits';
export const ATTR_DEDUPED_FROM = 'td.deduped_from';
export const ATTR_CACHE_HIT = 'td.cache.hit';
export const ATTR_CACHE_HITS = 'td.cache.hits';
/** Calls the pass ended without running them (refused, unknown, invalid, denied, schema). */
export const ATTR_STOPPED = 'td.stopped';
export const ATTR_ERROR_CODE = 'td.error.code';
export const ATTR_QUEUE_CLASS = 'td.queue.class';
export const ATTR_WORKER = 'td.worker';
export const ATTR_ATTEMPT = 'td.attempt';
export const ATTR_IDEMPOTENCY_KEY = 'td.idempotency_key';
/** Why a call waited (WaitReason), on the wait spans. */
export const ATTR_WAIT_REASON = 'td.wait.reason';
/** The TD_LIMITS limit an `admission wait` span waited for (`tool:<name>`, `server:<name>`, `tenant:<name>`). */
export const ATTR_WAIT_LIMIT = 'td.wait.limit';
/** Confirmations the round asked for, on `confirm wait`. */
export const ATTR_CONFIRMATIONS = 'td.confirmations';
/** `approved`, or who denied it (`person`, `timeout`, `cancelled`), on `confirm wait`'s per-call events. */
export const ATTR_CONFIRM_DECISION = 'td.confirm.decision';
/** Definitions a find_tools call returned. */
export const ATTR_FIND_TOOLS_FOUND = 'td.find_tools.found';

/**
 * Why a call waited: `serial_barrier` (the round's order: a serial call waits for everything
 * before it, and what follows waits for it), `run_limit` (MAX_CONCURRENT_TOOLS calls of the run
 * in flight), `serial_lane` (another serial call of the run, of another round, in flight),
 * `confirm` (a person's approval), `queue` (on the queue until a worker started it).
 */
export type WaitReason = 'serial_barrier' | 'run_limit' | 'serial_lane' | 'confirm' | 'queue';

// OpenTelemetry semantic conventions (gen_ai.* and messaging.* are still "development").
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
/** Value of `gen_ai.operation.name` on `execute <tool>` spans. */
export const GEN_AI_OPERATION_EXECUTE_TOOL = 'execute_tool';
export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';
/** Value of `messaging.system` for jobs on BullMQ (not a registered value; semconv allows custom ones). */
export const MESSAGING_SYSTEM_BULLMQ = 'bullmq';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_URL_PATH = 'url.path';
export const ATTR_SERVICE_NAME = 'service.name';
