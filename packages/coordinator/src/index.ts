// The coordinator package's only door: named exports, types with `export type`.

export { createDistributedEngine } from './app/distributed.js';
export type { CreateEngineOptions } from './app/embedded.js';
export { createEngine } from './app/embedded.js';
export { MemoryMcpSessions, RedisMcpSessions } from './app/mcp-sessions.js';
export { runMcpStdio } from './app/mcp-stdio.js';
export { CoordinatorMetrics } from './app/metrics.js';
export { mcpHooks, observabilityHooks } from './app/observe.js';
export type { RunningCoordinator, ServeOptions } from './app/serve.js';
export { startCoordinator } from './app/serve.js';
export type { AnswerOutcome, ConfirmDecision, ConfirmHub, PendingConfirmation } from './confirm/confirm-hub.js';
export { MemoryConfirmHub } from './confirm/memory.js';
export { RedisConfirmHub } from './confirm/redis.js';
export type {
  AsyncRoundReply,
  CallState,
  CatalogView,
  Dispatcher,
  RoundCallState,
  RoundView,
  SessionInput,
  SubmitRoundInput,
  ToolsView,
} from './dispatcher.js';
export { RequestError } from './dispatcher.js';
export type { EngineHooks, EngineOptions } from './engine.js';
export { Engine } from './engine.js';
export type { DispatchEvent, EventBus, EventName } from './events/event-bus.js';
export { MemoryEventBus } from './events/memory.js';
export { RedisEventBus } from './events/redis.js';
export { LocalExecutor } from './executors/local.js';
export { QueueExecutor } from './executors/queue/queue-executor.js';
export type { McpHooks, McpServiceOptions } from './http/mcp/mcp-service.js';
export { McpService } from './http/mcp/mcp-service.js';
export type { McpCancel, McpSessionRecord, McpSessions } from './http/mcp/mcp-sessions.js';
export type { BuildServerOptions } from './http/server.js';
export { buildServer } from './http/server.js';
export type { Principal, Role, TokenTable } from './http/tokens.js';
export { loadTokenTable } from './http/tokens.js';
export { MemoryLedger } from './ledger/memory.js';
export { RedisLedger } from './ledger/redis.js';
export type { RoundLedger } from './ledger/round-ledger.js';
export type { HistoryEntry, RoundRef, RoundResponse, SessionState, StoredPlanned } from './model.js';
export { Catalog, resolveSpec } from './rules/catalog.js';
export type { NamedLimits } from './rules/named-limits.js';
export { parseNamedLimits } from './rules/named-limits.js';
export { MemoryStore } from './store/memory.js';
export { RedisStore } from './store/redis.js';
export type { Store } from './store/store.js';
