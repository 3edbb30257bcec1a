// long-file: the coordinator's domain types, one vocabulary for every layer: what rules, passes and seams share about calls, rounds and
// sessions. Nothing here does I/O; everything above imports from here, and this imports only
// the wire types of @tool-dispatch/shared.
import type {
  Approval,
  CallResult,
  ExecJob,
  ExecOutcome,
  NeutralTool,
  ResultBudget,
  RoundCallState,
  ToolDefinition,
  ToolSpec,
} from '@tool-dispatch/shared';

export type { CallState, RoundCallState } from '@tool-dispatch/shared';

/** A call in the engine's one shape, whatever shape it arrived in. */
export interface NormalCall {
  index: number;
  id: string;
  /** The name as called (before unwrapping run_tool); '' when the call had none. */
  name: string;
  /** The args as an object, or undefined when they could not be read (see argsProblem). */
  args: Record<string, unknown> | undefined;
  argsProblem?: string;
  /** Set when the item is not a function call at all (a text block, a custom tool call...): it ends `invalid`. */
  other?: OtherItem;
}

/** An item of a model's output that is not a function call, as `otherItemOf` read it. */
export interface OtherItem {
  /** Its `type`, as sent (cut to 64 characters). */
  type: string;
  /** What it is, for the message: "a text block". */
  what: string;
  /** Its API wants an answer from the client as for a function call (custom tool calls); else none is sent. */
  answered: boolean;
}

/** What pass 1 decided for one call. */
export type CallDecision =
  | { kind: 'done'; result: CallResult }
  | { kind: 'follow'; leader: number }
  | { kind: 'run'; needsConfirm: boolean; output?: unknown; approval?: Approval };

/** One call as pass 1 leaves it. */
export interface PlannedCall {
  call: NormalCall;
  /** Resolved name (after unwrapping run_tool). */
  name: string;
  args: Record<string, unknown>;
  spec: ToolSpec | undefined;
  key: string;
  dedupable: boolean;
  cacheable: boolean;
  /** Normalised paths a read_files call reads (kept with its dedupe entry). */
  paths: string[] | undefined;
  decision: CallDecision;
  /** Why the call's args are not a JSON object (pass 1 only: its schema answer names it, else it ends invalid). */
  argsProblem?: string;
}

/** A call's resolved name, args and key, worked out before pass 1 (`lookupKeys`). */
export interface KnownKey {
  name: string;
  args: Record<string, unknown>;
  key: string;
}

/** The key of a run in per-run maps (limits, cancellation): session and run. */
export const runKeyOf = (ref: Pick<RoundRef, 'session' | 'run'>): string => `${ref.session}\u0000${ref.run}`;

/** Names one round. */
export interface RoundRef {
  session: string;
  run: string;
  round: string;
}

/** A pass-1 decision as stored (PlannedCall without the spec, which is re-read from the catalog). */
export interface StoredPlanned {
  call: NormalCall;
  name: string;
  args: Record<string, unknown>;
  key: string;
  dedupable: boolean;
  cacheable: boolean;
  paths?: string[];
  decision: CallDecision;
}

/** What a session is made of (DESIGN.md vocabulary). Serialisable. */
export interface SessionState {
  id: string;
  provider: string;
  tenant: string;
  /** Tool names approved for the whole session, or every tool. */
  autoApprove: string[] | 'all';
  clientTools: ToolDefinition[];
  /** Tools the model may call directly. */
  loaded: string[];
  /** Tools whose schema this session has been shown. */
  fetched: string[];
  workspace: string;
  /** The result budget its calls' outputs are held to (API.md v1.2): its own, else the defaults; absent: none. */
  resultBudget?: ResultBudget;
  /** The budget the session's PUT set itself (kept by a later PUT that sets none). */
  ownBudget?: ResultBudget;
  /** `anthropic`: Anthropic's own tool search (API.md v1.2): every tool loaded, all but find_tools deferred by the API. */
  toolSearch?: ToolSearch;
  createdAt: number;
  updatedAt: number;
}

/** One recorded result: the call's result plus where and when it was committed. */
export interface HistoryEntry extends CallResult {
  round: string;
  run: string;
  /** Commit time, ISO 8601. */
  at: string;
  /** The normalised workspace paths the call named (read_files, edit_file, download_file), for file_history. */
  paths?: string[];
}

/** The `tool.result` event of a committed call: its result, with the round and run. */
export function toolResultData(at: { round: string; run: string }, result: CallResult): Record<string, unknown> {
  return { round: at.round, run: at.run, ...result };
}

/** A committed call's result, as the round's answer holds it. */
export function resultOf(entry: HistoryEntry): CallResult {
  const { round: _round, run: _run, at: _at, paths: _paths, ...result } = entry;
  return result;
}

/** A successful result remembered for the run's dedupe map. */
export interface DedupeEntry {
  key: string;
  tool: string;
  callId: string;
  round: string;
  output: unknown;
  /** Normalised workspace paths the call read (read_files, file_history), for invalidation by edits, downloads and commands. */
  paths?: string[];
}

/** Which dedupe entries of a run a side effect invalidates. */
export interface DedupeInvalidation {
  tool: string;
  /** Only entries whose paths meet these; absent means every entry of the tool. */
  paths?: string[];
}

export interface CachedResult {
  output: unknown;
  callId: string;
  round: string;
  storedAt: number;
}

export interface RoundResponse {
  round: string;
  results: CallResult[];
}

/**
 * (v1.3) What `Dispatcher.submitRoundAsync` answers: the round goes on (`running`, its answer
 * later from `getRound`), or it had already ended (a retry under the Idempotency-Key of a finished
 * round, or one that finished before the reply) with its answer.
 */
export type AsyncRoundReply =
  | { status: 'running'; round: string; run: string }
  | { status: 'done'; response: RoundResponse };

/** (v1.3) A round as `Dispatcher.getRound` sees it: its answer once done, else where each call is. */
export type RoundView =
  | {
      status: 'done';
      response: RoundResponse;
      /** The type of each item that was not a function call (by call index), for the format views; absent: none was. */
      items?: (string | undefined)[];
    }
  | { status: 'running'; round: string; run: string; calls: RoundCallState[] };

/** What one round's passes share: which round, the session as the round read it, the run's signal and its owner. */
export interface RoundContext {
  ref: RoundRef;
  session: SessionState;
  /** Aborted when the run is cancelled. */
  signal: AbortSignal;
  /** This coordinator as the round's owner (distributed mode, where a ledger fences commits); else undefined. */
  owner: string | undefined;
  /** The coordinator that began the round, when this one took it over: its calls' outcomes are kept under its name. */
  origin?: string;
}

/**
 * (v1.3) A run's places asked for in the round's begin step (Store.beginRound), in the session's
 * slot: taken there, one per ticket, only when all are free and no call waits for one (else each
 * call asks Limits in turn). The keys are the run limit's (RedisLimits' layout).
 */
export interface RunPlacesAsk {
  /** The limit's held places (ZSET ticket → lease end) and its waiters. */
  held: string;
  wait: string;
  /** The run's places in all (MAX_CONCURRENT_TOOLS). */
  concurrency: number;
  /** Each place's lease, and the limit keys' TTL. */
  leaseMs: number;
  keyTtlMs: number;
  /** One per call of the round (`<round>:<index>`), the names its calls ask under. */
  tickets: string[];
}

/** (v1.3) The places a round's commit gives back in the same step (Store.commitRound): those no call gave back before. */
export interface RunPlacesGive {
  held: string;
  wait: string;
  tickets: string[];
}

/** Who answers a parked call (API.md "Parked calls"): a person (`interactive`) or the agent backend's client. */
export type InputKind = 'interactive' | 'client' | 'elicitation';

/** Who answers a parked call as a whole (an elicitation is a question asked during a call that runs). */
export type CallParkKind = Exclude<InputKind, 'elicitation'>;

/** A parked call waiting for its answer (API.md `GET .../inputs`), as the store keeps it. */
export interface ParkedInput {
  /**
   * `in_<round>_<call index>`: the same for a coordinator that takes the round over, unique across
   * rounds; an elicitation's adds `_<n>`, its place among the call's questions.
   */
  inputId: string;
  kind: InputKind;
  session: string;
  round: string;
  run: string;
  callId: string;
  /** The call's place in its round, to list a round's parked calls in call order. */
  callIndex: number;
  /** The tool's resolved name (run_tool unwrapped). */
  name: string;
  args: Record<string, unknown>;
  /** Epoch ms it was first parked. */
  createdAt: number;
  /** Epoch ms past which it ends `error`/`timeout` (createdAt + TD_INPUT_TIMEOUT_MS), whoever waits for it. */
  deadline: number;
}

/** An answer posted for a parked call (`POST .../inputs/{inputId}`), after edge validation. */
export type InputAnswer = { output: unknown } | { error: string };

/** How a parked call ended: answered, past its deadline, or cancelled (its run, or the service stopping). */
export type InputSettlement =
  | { by: 'answer'; answer: InputAnswer }
  | { by: 'timeout' }
  | { by: 'cancelled' }
  /** Embedded mode's drain: the service stopped while the call was parked. */
  | { by: 'stopped' };

/** Observation points of a round for tracing and metrics; all optional. */
export interface RoundHooks {
  round?<T>(info: RoundRef & { calls: number }, fn: () => Promise<T>): Promise<T>;
  pass?<T>(name: 'preflight' | 'commit', info: RoundRef, fn: () => Promise<T>): Promise<T>;
  /**
   * A call the coordinator answered itself (find_tools, file_history, error_history) as pass 2
   * gives it its place: executed here, it gets its own `execute <tool>` span.
   */
  answered?(call: PlannedCall, ref: RoundRef, result: CallResult): void;
  /** Wraps each executed call (the `execute` span's parent, the duration metric). */
  execute?(call: PlannedCall, job: ExecJob, run: () => Promise<ExecOutcome>): Promise<ExecOutcome>;
  /** Each committed result, with the call's resolved name and its round. */
  result?(result: CallResult, planned: PlannedCall, ref: RoundRef): void;
  roundsInProgress?(n: number): void;
  /** Rounds waiting for their turn (TD_MAX_ROUNDS_IN_FLIGHT reached), each time the number changes. */
  roundsWaiting?(n: number): void;
  /** Confirmations asked (+n) and decided (-n). */
  confirmations?(delta: number): void;
  /** (v1.2) A grant made, used to approve a call, or revoked. */
  grants?(event: 'created' | 'used' | 'revoked'): void;
  /** Parked calls this coordinator waits on: one more (+1) or one fewer (-1). */
  inputs?(delta: number): void;
  /** Wraps the gate's wait for the round's confirmations (the `confirm wait` span); `wait` resolves with one decision each. */
  confirmWait?<T extends readonly { approve: boolean; by: string }[]>(
    info: RoundRef & { asked: readonly { callId: string; name: string; confirmationId: string }[] },
    wait: () => Promise<T>,
  ): Promise<T>;
  /** A call of pass 2 that waited before it could start, and why (`admission wait` spans). */
  waited?(
    call: PlannedCall,
    wait: {
      reason: 'serial_barrier' | 'run_limit' | 'serial_lane' | 'named_limit';
      /** The TD_LIMITS limit waited for (`named_limit`). */
      limit?: string;
      startMs: number;
      endMs: number;
    },
  ): void;
  /** A call that waited for the TD_LIMITS limit `limit` past maxWaitMs or its deadline: it ends rate_limited. */
  limitRejected?(call: PlannedCall, limit: string): void;
  /** A call started (+1) or ended (-1) its wait for its TD_LIMITS limits (`limit`: their names, joined by `, `). */
  limitWaiting?(limit: string, delta: 1 | -1): void;
  /** Wraps pass 1's answer of a find_tools call (the `find_tools` span). */
  findTools?<T extends { tools: readonly unknown[] }>(call: PlannedCall, answer: () => T): T;
}

/** Body of `PUT /v1/sessions/{session}` after edge validation. */
export interface SessionInput {
  provider: string;
  tenant?: string;
  autoApprove?: string[] | 'all';
  clientTools?: ToolDefinition[];
  resultBudget?: ResultBudget;
  toolSearch?: ToolSearch;
}

/** How a session's model finds deferred tools: `anthropic`, the Messages API's tool search over `defer_loading` tools. */
export type ToolSearch = 'anthropic';

/** A round as submitted (`POST .../rounds`), after edge validation. */
export interface SubmitRoundInput {
  session: string;
  run: string;
  /** Raw calls in any of the three shapes (native, OpenAI, Anthropic); normalised by the engine. */
  calls: unknown[];
  idempotencyKey?: string;
  /** Aborted when the client goes away: a retry stops waiting for the round it names. */
  signal?: AbortSignal;
  /** Aborted to cancel this round alone (an MCP client's `notifications/cancelled`): its calls end `cancelled`. */
  cancel?: AbortSignal;
}

/** The tools array and turn-context text for a session's next model request (`GET .../tools`). */
export interface ToolsView {
  tools: NeutralTool[];
  context: string;
  /** The session's tool search: the anthropic tools array then marks every tool but find_tools `defer_loading`. */
  toolSearch?: ToolSearch;
}

/** (v1.2) A standing approval (API.md "Grants"), as `GET .../grants` lists it. */
export interface Grant {
  grantId: string;
  tool: string;
  scope: 'args' | 'tool';
  /** `args` scope: the SHA-256 of the canonical args it approves. */
  argsHash?: string;
  /** Only calls of this run. */
  run?: string;
  /** RFC 3339; absent: until revoked or the session ends. */
  expiresAt?: string;
  /** The token name of who made it. */
  createdBy: string;
  createdAt: string;
  /** Calls it approved. */
  uses: number;
}

/** A call the gate is about to ask for, as grants are matched against it. */
export interface GrantMatch {
  tool: string;
  argsHash: string;
  run: string;
  /** Epoch ms. */
  now: number;
}

/**
 * Something waiting for a person or a client, as the inbox lists it: a pending confirmation
 * (`id` its confirmationId) or a parked call or question (`id` its inputId).
 */
export interface InboxItem {
  id: string;
  type: 'confirmation' | 'input';
  /** For inputs: who answers it. */
  kind?: InputKind;
  session: string;
  round: string;
  run: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
  /** Epoch ms it was asked. */
  createdAt: number;
  /** Its place among its round's items asked at once (call order). */
  order: number;
  /** Epoch ms its wait ends (TD_CONFIRM_TIMEOUT_MS or TD_INPUT_TIMEOUT_MS after it was asked). */
  deadline: number;
}

/** A change of what waits (the inbox's live feed): an item asked, or one that no longer waits (answered, timed out, cancelled). */
export type InboxChange =
  | { kind: 'asked'; session: string; item: InboxItem }
  | { kind: 'gone'; session: string; id: string };

/** Where a catalog entry comes from (API.md v1.1 `source`). */
export type ToolSource = 'builtin' | 'user' | 'mcp' | 'client';

/** Catalog entry as `GET /v1/tools` shows it; an MCP tool's names its `server`. */
export type CatalogView = Pick<
  ToolSpec,
  'name' | 'description' | 'concurrency' | 'confirm' | 'deferred' | 'cacheable' | 'parameters'
> & { source: ToolSource; server?: string; annotations?: Record<string, unknown> };
