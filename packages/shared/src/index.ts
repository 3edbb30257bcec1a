export {
  ALWAYS_SERIAL,
  CACHEABLE_TOOLS,
  CONCURRENT_BUILTINS,
  INTERACTIVE_DEFINITIONS,
  SHIPPED_DEFINITIONS,
  UNSHIPPED_DEFINITIONS,
  USER_TOOL_PREFIXES,
} from './builtins.js';
export { callKey, canonicalJson, hashCanonical } from './canonical.js';
export type { DispatchConfig, DispatchConfigOptions, Mode } from './config.js';
export {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  DEFAULT_INPUT_TIMEOUT_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_WORKER_CONCURRENCY,
  EVENT_REPLAY_MS,
  MAX_ARGS_BYTES,
  MAX_ARGS_DEPTH,
  MAX_BODY_BYTES,
  MAX_CALLS_PER_ROUND,
  MAX_CONCURRENT_TOOLS,
  MAX_OUTPUT_BYTES,
  MAX_STREAM_BYTES,
  RESULT_CACHE_TTL_MS,
  resolveConfig,
} from './config.js';
export { DispatchError, isToolError, ToolError } from './errors.js';
export type {
  ExecFailureKind,
  ExecJob,
  ExecOutcome,
  Executor,
  Handler,
  HandlerConfig,
  HandlerContext,
  QueueClass,
} from './execution.js';
export { failedOutcome } from './execution.js';
export { ID_PATTERN, isValidId, newId } from './ids.js';
export type { RedisKeys } from './keys.js';
export { redisKeys, SESSION_TTL_MS } from './keys.js';
export type { LuaScript, ScriptClient } from './lua-script.js';
export { defineScript, runScript } from './lua-script.js';
export { DuePerKey } from './periodic.js';
export type { CancelMessage, QueuedJob, QueuedJobData, WorkerAnnouncement } from './queues.js';
export {
  batchJobIdFor,
  CANCEL_TTL_MS,
  encodeQueuedJob,
  FINISHED_JOB_RETENTION_S,
  JOB_LOCK_MS,
  jobIdFor,
  MAX_STALLED,
  OUTCOME_AFTER_COMMIT_TTL_MS,
  OUTCOME_TTL_MS,
  parseOutcome,
  parseQueuedJob,
  QUEUE_NAMES,
  RESULTS_STREAM_TTL_MS,
  RUNNING_MARK,
  STALLED_INTERVAL_MS,
  STALLED_REASON,
  tryParseJson,
  WORKER_HEARTBEAT_MS,
  WORKER_TTL_MS,
} from './queues.js';
export { coalesceWrites } from './redis-writes.js';
export type { CallResult, ErrorCode, FailureKind, ResultError, Status, StopStatus } from './result.js';
export { assertNever, ERROR_CODES, FAILURES, isSuccess, STATUSES } from './result.js';
export type { NeutralTool, ToolDefinition, ToolKind, ToolSpec } from './tool.js';
export type {
  Attributes,
  CallOutcome,
  Context,
  OtlpProtocol,
  Span,
  SpanSpec,
  TraceCarrier,
  Tracer,
  Tracing,
  TracingConfig,
  TracingOptions,
} from './tracing.js';
export {
  ATTR_ATTEMPT,
  ATTR_CACHE_HIT,
  ATTR_CACHE_HITS,
  ATTR_CALL_COUNT,
  ATTR_CALL_ID,
  ATTR_DEDUPE_HIT,
  ATTR_DEDUPE_HITS,
  ATTR_DEDUPED_FROM,
  ATTR_ERROR_CODE,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_IDEMPOTENCY_KEY,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_QUEUE_CLASS,
  ATTR_ROUND,
  ATTR_RUN,
  ATTR_SERVICE_NAME,
  ATTR_SESSION,
  ATTR_STATUS,
  ATTR_STOPPED,
  ATTR_TENANT,
  ATTR_URL_PATH,
  ATTR_WORKER,
  callAttributes,
  executeSpanName,
  extractContext,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  globalTracing,
  initTracing,
  injectContext,
  MESSAGING_SYSTEM_BULLMQ,
  recordCallEvents,
  resolveTracingConfig,
  SPAN_COMMIT,
  SPAN_PREFLIGHT,
  SPAN_ROUND,
  SpanKind,
  SpanStatusCode,
  setSpanOutcome,
  setSpanResult,
  TRACER_NAME,
  withSpan,
} from './tracing.js';
export type { Validation } from './validate.js';
export { describeErrors, schemaProblem, validateAgainst } from './validate.js';
