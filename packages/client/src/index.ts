export type { EventsOptions, RequestOptions, SubmitRoundOptions, TdClientOptions } from './client.js';
export { TdClient } from './client.js';
export { TdApiError } from './errors.js';
export type { RawSseEvent } from './sse-parser.js';
export { SseParser } from './sse-parser.js';
export type {
  AnthropicCall,
  AnthropicRoundResponse,
  AnthropicTool,
  AnthropicToolResult,
  Call,
  CallResult,
  CatalogEntry,
  Confirmation,
  ConfirmationAnswer,
  ConfirmRequestedEvent,
  ErrorBody,
  ErrorCode,
  HistoryEntry,
  NativeCall,
  NeutralTool,
  OpenAiCall,
  OpenAiRoundResponse,
  OpenAiTool,
  OpenAiToolMessage,
  ResultError,
  RoundCompletedEvent,
  RoundResponse,
  RoundStartedEvent,
  Session,
  SessionInput,
  Status,
  TdEvent,
  ToolDefinition,
  ToolResultEvent,
  ToolsResponse,
  WireFormat,
} from './types.js';
