export {
  ALWAYS_SERIAL,
  CACHEABLE_TOOLS,
  CONCURRENT_BUILTINS,
  SHIPPED_DEFINITIONS,
  UNSHIPPED_DEFINITIONS,
  USER_TOOL_PREFIXES,
} from './builtins.js';
export { callKey, canonicalJson, hashCanonical } from './canonical.js';
export {
  DEFAULT_CONFIRM_TIMEOUT_MS,
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
export type { DispatchConfig, DispatchConfigOptions, Mode } from './config.js';
export { DispatchError, isToolError, ToolError } from './errors.js';
export type {
  ExecJob,
  ExecOutcome,
  Executor,
  Handler,
  HandlerConfig,
  HandlerContext,
  QueueClass,
} from './execution.js';
export { ID_PATTERN, isValidId, newId } from './ids.js';
export { assertNever, ERROR_CODES, FAILURES, isSuccess, STATUSES } from './result.js';
export type { CallResult, ErrorCode, FailureKind, ResultError, Status, StopStatus } from './result.js';
export type { NeutralTool, ToolDefinition, ToolKind, ToolSpec } from './tool.js';
export { describeErrors, schemaProblem, validateAgainst } from './validate.js';
export type { Validation } from './validate.js';
