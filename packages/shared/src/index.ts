/**
 * `@tool-dispatch/shared`: the wire types (API.md) and the rules-level helpers every package uses.
 * Redis and BullMQ internals go through `@tool-dispatch/shared/redis`, OpenTelemetry through
 * `@tool-dispatch/shared/tracing` (package.json exports).
 */

export { abortListenersLeft, onAbort, raceAbort } from './abort-listeners.js';
export {
  ALWAYS_SERIAL,
  CACHEABLE_TOOLS,
  CONCURRENT_BUILTINS,
  COORDINATOR_DEFINITIONS,
  INTERACTIVE_DEFINITIONS,
  SHIPPED_DEFINITIONS,
  UNSHIPPED_DEFINITIONS,
  USER_TOOL_PREFIXES,
} from './builtins.js';
export { callKey, canonicalJson, hashCanonical } from './canonical.js';
export type { DispatchConfig, DispatchConfigOptions, Mode, SandboxConfig } from './config.js';
export {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  DEFAULT_INPUT_TIMEOUT_MS,
  DEFAULT_JOB_CALLS,
  DEFAULT_JOB_NAME,
  DEFAULT_MAX_ROUNDS_IN_FLIGHT,
  DEFAULT_MCP_RUN_IDLE_MS,
  DEFAULT_MCP_TASK_AFTER_MS,
  DEFAULT_REDIS_COMMAND_TIMEOUT_MS,
  DEFAULT_REDIS_REPLICA_ACKS,
  DEFAULT_REDIS_WAIT_MS,
  DEFAULT_ROUND_QUEUE_MS,
  DEFAULT_ROUND_RETENTION_MS,
  DEFAULT_SANDBOX_FILE_MB,
  DEFAULT_SANDBOX_MEMORY_MB,
  DEFAULT_SANDBOX_PIDS,
  DEFAULT_SESSION_TTL_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_WORKER_CONCURRENCY,
  DEFAULT_WORKER_SERIAL_CONCURRENCY,
  EVENT_REPLAY_MS,
  JOB_NAME_FIELDS,
  MAX_ARGS_BYTES,
  MAX_ARGS_DEPTH,
  MAX_BODY_BYTES,
  MAX_CALLS_PER_ROUND,
  MAX_CONCURRENT_TOOLS,
  MAX_JOB_CALLS,
  MAX_OUTPUT_BYTES,
  MAX_QUEUE_SHARDS,
  MAX_REDIS_REPLICA_ACKS,
  MAX_SANDBOX_LIMIT,
  MAX_STREAM_BYTES,
  RESULT_CACHE_TTL_MS,
  resolveConfig,
  resolveSandboxConfig,
  sandboxReadOf,
} from './config.js';
export { ConfigError, DispatchError, isToolError, ToolError } from './errors.js';
export type {
  ExecFailureKind,
  ExecJob,
  ExecOutcome,
  ExecuteOptions,
  Executor,
  Handler,
  HandlerConfig,
  HandlerContext,
  InputReply,
  InputRequest,
  InputRequester,
  QueueClass,
} from './execution.js';
export { callIdFor, failedOutcome, failureKindOf, SETTLE_GRACE_MS, splitCallId } from './execution.js';
export { idempotencyKeyOf } from './idempotency-key.js';
export { ID_PATTERN, isValidId, newId } from './ids.js';
export type { AnnouncedTool, McpServerStatus } from './mcp.js';
export { elicitationAnswerProblem, isMcpToolName, MCP_SERVER_NAME, mcpToolName } from './mcp.js';
export type {
  AdmissionErrorCode,
  Approval,
  CallResult,
  CallState,
  ErrorCode,
  FailureKind,
  ResultError,
  RoundAccepted,
  RoundCallState,
  RoundRunning,
  Status,
  StopStatus,
} from './result.js';
export { assertNever, CALL_STATES, ERROR_CODES, FAILURES, isSuccess, STATUSES } from './result.js';
export type { Artifact, JobBudget, ResultBudget, TruncatedOutput } from './result-budget.js';
export {
  artifactPath,
  artifactText,
  budgetedLength,
  budgetValueProblem,
  effectiveBudget,
  isTruncatedOutput,
  lineCount,
  MAX_ARTIFACT_BYTES,
  MAX_RESULT_BUDGET,
  MCP_PROVIDER_BUDGET,
  MIN_RESULT_BUDGET,
  previewOf,
  RESULTS_DIR,
  STANDBY_ARTIFACT_MIN_CHARS,
  standbyThreshold,
  truncatedOutput,
} from './result-budget.js';
export type { CanonicalHost, NetPattern, SandboxNet } from './sandbox-net.js';
export {
  canonicalHost,
  formatNetPattern,
  parseNetPattern,
  parsePort,
  sandboxNetOf,
  splitHostPort,
} from './sandbox-net.js';
export type { NeutralTool, ToolDefinition, ToolKind, ToolSpec } from './tool.js';
export type { Validation } from './validate.js';
export { schemaProblem, validateAgainst } from './validate.js';
