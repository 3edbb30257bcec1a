/** Wire types of the coordinator's HTTP API (API.md), kept apart from the server's packages. */

export type Status = 'ok' | 'error' | 'deduped' | 'cached' | 'schema' | 'refused' | 'unknown' | 'invalid' | 'denied';
export type ErrorCode =
  | 'handler_error'
  | 'timeout'
  | 'worker_lost'
  | 'cancelled'
  | 'unavailable'
  | 'rate_limited'
  | 'sandbox_unavailable'
  | 'resource_limit';

export interface ResultError {
  code: ErrorCode | 'refused' | 'unknown' | 'invalid' | 'denied';
  message: string;
  details?: unknown;
}

/** One call's result; `name` is the tool after unwrapping run_tool. */
export interface CallResult {
  id: string;
  name: string;
  status: Status;
  output?: unknown;
  error?: ResultError;
  dedupedFrom?: string;
  dedupedFromRound?: string;
  durationMs: number;
  ranOn?: string;
  /** The key its side effects carried downstream (every executed call has one). */
  idempotencyKey?: string;
  /** (v1.2) Who let the call through the confirm gate: a token's name, `auto`, `mcp-client` or `grant:<grantId>`. */
  approval?: Approval;
}

/** (v1.2) Who approved a call, and when (RFC 3339). */
export interface Approval {
  by: string;
  at: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  concurrency?: 'concurrent' | 'serial';
  confirm?: boolean;
  timeoutMs?: number;
  interactive?: boolean;
}

/** Native call: args an object, or a JSON string of one. */
export interface NativeCall {
  id: string;
  name: string;
  args: Record<string, unknown> | string;
}

/** OpenAI Chat Completions tool call. */
export interface OpenAiCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Anthropic Messages tool_use block. */
export interface AnthropicCall {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** OpenAI Responses `function_call` output item: the call's id is `call_id` (`id` is the item's own). */
export interface OpenAiResponsesCall {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  id?: string;
}

export type Call = NativeCall | OpenAiCall | AnthropicCall | OpenAiResponsesCall;

/** OpenAI Chat Completions custom tool call: it ends `invalid` (only function tools run), answered by a tool message. */
export interface OpenAiCustomCall {
  id: string;
  type: 'custom';
  custom: { name: string; input: string };
}

/**
 * Any other item of a model's output, as its SDK types it: a text or thinking block, a reasoning
 * or message item, a custom or hosted tool call (v1.1). It ends `invalid`, its message saying
 * what it is; the format views answer only custom tool calls among these.
 */
export interface OtherItem {
  readonly type: string;
}

/**
 * What a round takes: calls in any of the four shapes, and whatever else an SDK's array holds
 * (`ChatCompletionMessageToolCall[]`, Anthropic's `ContentBlock[]`, Responses' `ResponseOutputItem[]`),
 * so the array goes in as it comes.
 */
export type RoundItem = Call | OpenAiCustomCall | OtherItem;

export interface SessionInput {
  provider: 'openai' | 'anthropic' | 'claude-code' | (string & {});
  tenant?: string;
  autoApprove?: string[] | 'all';
  clientTools?: ToolDefinition[];
  /** Characters of outputs a model gets, per call and per round (API.md v1.2); past them a preview and an artifact. */
  resultBudget?: { call?: number; round?: number };
  /** `anthropic`: Anthropic's tool search (provider `anthropic` only). */
  toolSearch?: 'anthropic';
}

export interface Session {
  id: string;
  provider: string;
  tenant: string;
  autoApprove: string[] | 'all';
  clientTools: ToolDefinition[];
  /** Tools the model may call directly. */
  loaded: string[];
  /** Tools whose schema the session has been shown. */
  fetched: string[];
  workspace: string;
  createdAt: number;
  updatedAt: number;
  /** The budget in force (its own, else the deployment's or provider's default); absent: none. */
  resultBudget?: { call?: number; round?: number };
  toolSearch?: 'anthropic';
}

export type WireFormat = 'neutral' | 'openai' | 'openai-responses' | 'anthropic';

export interface NeutralTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface OpenAiTool {
  type: 'function';
  function: NeutralTool;
}

/** An entry of the Responses API's tools array (flat). */
export interface OpenAiResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
  /** With `toolSearch: "anthropic"`: on every tool but find_tools, so the API loads it once a search returns it. */
  defer_loading?: true;
}

/** A tool a find_tools search returned, which the Messages API expands into its definition. */
export interface AnthropicToolReference {
  type: 'tool_reference';
  tool_name: string;
}

export interface ToolsResponse<T> {
  tools: T[];
  /** Turn-context text naming the deferred tools. */
  context: string;
}

export interface OpenAiToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export interface AnthropicToolResult {
  type: 'tool_result';
  tool_use_id: string;
  /** The text; with `toolSearch: "anthropic"`, a find_tools result's tool references. */
  content: string | AnthropicToolReference[];
  is_error: boolean;
}

export interface RoundResponse {
  round: string;
  /** One per call, in call order. */
  results: CallResult[];
}

export interface OpenAiRoundResponse extends RoundResponse {
  messages: OpenAiToolMessage[];
}

/** What the Responses API wants back for one `function_call` item. */
export interface OpenAiFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** What the Responses API wants back for one `custom_tool_call` item: always its `invalid` message. */
export interface OpenAiCustomToolCallOutput {
  type: 'custom_tool_call_output';
  call_id: string;
  output: string;
}

export interface OpenAiResponsesRoundResponse extends RoundResponse {
  items: Array<OpenAiFunctionCallOutput | OpenAiCustomToolCallOutput>;
}

export interface AnthropicRoundResponse extends RoundResponse {
  content: AnthropicToolResult[];
}

export interface HistoryEntry extends CallResult {
  round: string;
  run: string;
  /** Commit time, ISO 8601. */
  at: string;
}

export interface CatalogEntry {
  name: string;
  description: string;
  concurrency: 'concurrent' | 'serial';
  confirm: boolean;
  deferred: boolean;
  cacheable: boolean;
  parameters: Record<string, unknown>;
}

export interface Confirmation {
  confirmationId: string;
  round: string;
  run: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
  /** Epoch ms; beyond API.md. */
  createdAt?: number;
}

export interface ConfirmationAnswer {
  confirmation: Confirmation;
  approve: boolean;
  remember: boolean;
  /** (v1.2) The grant the approval made. */
  grant?: Grant;
}

/** (v1.2) What an approval may grant: later calls of the tool (`args`: with the same args) approved without asking. */
export interface GrantRequest {
  scope: 'args' | 'tool';
  /** Only in the run of the call answered. */
  run?: true;
  ttlMs?: number;
}

/** (v1.2) A standing approval of a session (`GET .../grants`). */
export interface Grant {
  grantId: string;
  tool: string;
  scope: 'args' | 'tool';
  argsHash?: string;
  run?: string;
  expiresAt?: string;
  createdBy: string;
  createdAt: string;
  uses: number;
}

/** Who answers a parked call: a person (`interactive`, ask_user among them) or the agent backend's client. */
export type InputKind = 'interactive' | 'client';

/** A parked call waiting for its answer (`GET .../inputs`, the `input.requested` event). */
export interface ParkedInput {
  /** Unique across rounds; answer with it (or with the callId, when only one parked call has it). */
  inputId: string;
  kind: InputKind;
  round: string;
  run: string;
  callId: string;
  /** The tool, run_tool unwrapped. */
  name: string;
  args: Record<string, unknown>;
}

/** An answer to a parked call: its output (ok), or an error message (error/handler_error). */
export type InputAnswer = { output: unknown } | { error: string };

/** What `POST .../inputs/{inputId}` answers: the status the answer gave the call. */
export interface InputAnswered {
  inputId: string;
  status: 'ok' | 'error';
}

interface EventBase<N extends string, D> {
  /** Resume after this event with `lastEventId`. */
  id: string;
  name: N;
  data: D;
}

export type RoundStartedEvent = EventBase<
  'round.started',
  { round: string; run: string; calls: Array<{ id: string; name: string }> }
>;
export type ConfirmRequestedEvent = EventBase<
  'confirm.requested',
  { round: string; run: string; callId: string; confirmationId: string; name: string; args: Record<string, unknown> }
>;
export type ToolResultEvent = EventBase<'tool.result', CallResult & { round: string; run: string }>;
export type RoundCompletedEvent = EventBase<'round.completed', { round: string; run: string }>;

export type InputRequestedEvent = EventBase<'input.requested', ParkedInput>;

/** An event of a session's stream (GET /v1/sessions/{session}/events). */
export type TdEvent =
  | RoundStartedEvent
  | ConfirmRequestedEvent
  | InputRequestedEvent
  | ToolResultEvent
  | RoundCompletedEvent;

/** The error body every 4xx/5xx carries. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** (v1.3) Where a call of a running round is (`GET .../rounds/{round}` while it runs). */
export type CallState = 'queued' | 'running' | 'waiting_for_approval' | 'waiting_for_input' | 'done';

/** (v1.3) One call of a running round: its id and tool name (run_tool unwrapped), and its state. */
export interface RoundCallState {
  id: string;
  name: string;
  state: CallState;
}

/** (v1.3) The `202` of `POST .../rounds` with `Prefer: respond-async`: the round goes on, its answer at `Location`. */
export interface RoundAccepted {
  round: string;
  run: string;
  status: 'running';
}

/** (v1.3) The `202` of `GET .../rounds/{round}` while the round runs. */
export interface RoundRunning extends RoundAccepted {
  calls: RoundCallState[];
}

/** A round's answer in the view `format` asks for. */
export type RoundResponseIn<F extends WireFormat | undefined> = F extends 'openai'
  ? OpenAiRoundResponse
  : F extends 'anthropic'
    ? AnthropicRoundResponse
    : F extends 'openai-responses'
      ? OpenAiResponsesRoundResponse
      : RoundResponse;

/** (v1.3) `submitRoundAsync`'s answer: the round goes on (`running`), or it had already ended (`done`, its answer). */
export type AsyncRoundAnswer<R = RoundResponse> = RoundAccepted | { status: 'done'; response: R };

/** (v1.3) `getRound`'s answer: the round's answer once done, else each call's state. */
export type RoundState<R = RoundResponse> = RoundRunning | { status: 'done'; response: R };
