import {
  type CallResult,
  COORDINATOR_DEFINITIONS,
  INTERACTIVE_DEFINITIONS,
  SHIPPED_DEFINITIONS,
  STATUSES,
  type Status,
} from '@tool-dispatch/shared';
import { type McpHub, registerMcpMetrics } from '@tool-dispatch/worker';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Upper bounds (seconds) of td_call_duration_seconds: tools run from milliseconds up to their deadline. */
export const CALL_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Distinct tool label values kept; calls of further names are counted under `OTHER_TOOL_LABEL`. */
export const MAX_TOOL_LABELS = 500;
/** Label for calls of tools that exist nowhere (status `unknown`): their names come from the model. */
export const UNKNOWN_TOOL_LABEL = '_unknown';
export const OTHER_TOOL_LABEL = '_other';

/** prom-client's default metrics that `promtool check metrics` rejects (gauges named *_total). */
const LINT_FAILING_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** The built-ins every deployment has: their series exist from the first scrape. */
export const BUILTIN_TOOL_NAMES: readonly string[] = [
  ...SHIPPED_DEFINITIONS,
  ...COORDINATOR_DEFINITIONS,
  ...INTERACTIVE_DEFINITIONS,
].map((d) => d.name);

/** Runs whose searched tools td_find_tools_search_hits_total keeps (the most recent). */
const MAX_SEARCHED_RUNS = 10_000;
/** td_mcp_requests_total's methods (others are counted under `other`, so clients cannot grow the labels). */
export const MCP_METHODS: readonly string[] = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'notifications/initialized',
  'notifications/cancelled',
  'response',
  'DELETE',
  'other',
];

/** td_refusals_total's reasons for calls (`recordCall` without a finer reason). */
const REFUSAL_STATUSES = ['refused', 'unknown', 'invalid', 'denied'] as const satisfies readonly Status[];

export interface MetricsOptions {
  /** Also expose process_* and nodejs_* metrics (default true; those promtool rejects are left out). */
  defaultMetrics?: boolean;
  /** Tools whose call series start at 0 (default the built-ins; more with `knownTools`). */
  tools?: readonly string[];
}

/** Keeps label cardinality bounded when the model invents tool names. */
export class ToolLabels {
  private readonly seen = new Set<string>();
  constructor(private readonly max = MAX_TOOL_LABELS) {}

  label(tool: string): string {
    if (this.seen.has(tool)) return tool;
    if (this.seen.size >= this.max) return OTHER_TOOL_LABEL;
    this.seen.add(tool);
    return tool;
  }
}

/** Adds the default process metrics to `registry`, minus the ones promtool's lint rejects. */
export function addDefaultMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of LINT_FAILING_DEFAULTS) registry.removeSingleMetric(name);
}

/** Refills gauges from their source (queue counts, worker heartbeats) just before a scrape. */
export type ScrapeHook = () => Promise<void> | void;

/** BullMQ's job states, as `Queue.getJobCounts()` names them. */
export type QueueJobState =
  | 'waiting'
  | 'active'
  | 'delayed'
  | 'completed'
  | 'failed'
  | 'paused'
  | 'prioritized'
  | 'waiting-children';

/**
 * The coordinator's Prometheus metrics (API.md "Operations"), in a registry of its own so
 * two coordinators in one process (tests, `dev`) never clash.
 */
export class CoordinatorMetrics {
  readonly registry = new Registry();
  readonly contentType: string = this.registry.contentType;
  private readonly tools = new ToolLabels();
  private readonly hooks: ScrapeHook[] = [];
  /** Tools whose td_call_duration_seconds series exist (started at 0, or observed). */
  private readonly timedTools = new Set<string>();

  /** A call waited `seconds` for the TD_LIMITS limit `limit`, then got its turn. */
  limitWaited(limit: string, seconds: number): void {
    this.limitWaits.inc({ limit });
    this.limitWaitSeconds.observe(seconds);
  }

  /** A call waited for `limit` and ended rate_limited. */
  limitRejected(limit: string): void {
    this.limitWaits.inc({ limit });
    this.limitRejections.inc({ limit });
  }

  /** A call started (+1) or ended (-1) its wait for its TD_LIMITS limits. */
  limitWaiting(limit: string, delta: 1 | -1): void {
    this.limitsWaiting.inc({ limit }, delta);
  }

  /** Adds the MCP metrics of the servers this process runs (embedded: td_mcp_servers_up, td_mcp_calls_total). */
  watchMcp(hub: McpHub): void {
    registerMcpMetrics(this.registry, hub);
  }

  private readonly calls = new Counter({
    name: 'td_calls_total',
    help: 'Calls answered, by tool (after unwrapping run_tool) and result status; every call counts, whatever its status.',
    labelNames: ['tool', 'status'] as const,
    registers: [this.registry],
  });
  private readonly callDuration = new Histogram({
    name: 'td_call_duration_seconds',
    help: 'Execution time of calls that ran (status ok or error), by tool.',
    labelNames: ['tool'] as const,
    buckets: CALL_DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly limitWaits = new Counter({
    name: 'td_limit_waits_total',
    help: 'Calls that waited for a TD_LIMITS limit before they could start, by limit (tool:<name>, server:<name>, tenant:<name>).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  private readonly limitRejections = new Counter({
    name: 'td_limit_rejections_total',
    help: 'Calls that ended rate_limited: their TD_LIMITS limit did not let them start within maxWaitMs or their deadline.',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  private readonly limitsWaiting = new Gauge({
    name: 'td_limit_waiting',
    help: 'Calls waiting now on this coordinator for their TD_LIMITS limits (or being let in), by limit; several joined by ", ".',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  private readonly limitWaitSeconds = new Histogram({
    name: 'td_limit_wait_seconds',
    help: 'How long calls waited for a TD_LIMITS limit (those that got their turn).',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly roundsInProgress = new Gauge({
    name: 'td_rounds_in_progress',
    help: 'Rounds this coordinator has accepted and not yet answered.',
    registers: [this.registry],
  });
  private readonly roundsWaiting = new Gauge({
    name: 'td_rounds_waiting',
    help: 'Rounds waiting for their turn on this coordinator (TD_MAX_ROUNDS_IN_FLIGHT in flight).',
    registers: [this.registry],
  });
  private readonly dedupeHits = new Counter({
    name: 'td_dedupe_hits_total',
    help: 'Calls answered deduped from an earlier successful call of the run.',
    registers: [this.registry],
  });
  private readonly cacheHits = new Counter({
    name: 'td_cache_hits_total',
    help: 'Calls answered from the result cache.',
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'td_refusals_total',
    help: 'Calls ended in pre-flight without running, by reason (refused, unknown, invalid, denied, or a finer reason).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly confirmationsPending = new Gauge({
    name: 'td_confirmations_pending',
    help: 'Confirmations asked by this coordinator and not yet answered.',
    registers: [this.registry],
  });
  private readonly grants = new Counter({
    name: 'td_grants_total',
    help: 'Approval grants (v1.2) made (created), calls they approved without asking (used), and grants revoked.',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  private readonly inputsPending = new Gauge({
    name: 'td_inputs_pending',
    help: 'Parked calls (interactive and client tools) this coordinator waits on for an answer.',
    registers: [this.registry],
  });
  private readonly queueJobs = new Gauge({
    name: 'td_queue_jobs',
    help: 'Jobs in each queue, by BullMQ state (and shard, with TD_QUEUE_SHARDS above 1).',
    labelNames: ['queue', 'state', 'shard'] as const,
    registers: [this.registry],
  });
  private readonly searches = new Counter({
    name: 'td_find_tools_searches_total',
    help: 'find_tools calls with a query answered ok (searches).',
    registers: [this.registry],
  });
  private readonly searchHits = new Counter({
    name: 'td_find_tools_search_hits_total',
    help: 'Later calls of a run of a tool a find_tools search of that run returned (how often a search found what the model then used).',
    registers: [this.registry],
  });
  /** The tools each run's searches returned (in this process; the oldest runs forgotten past MAX_SEARCHED_RUNS). */
  private readonly searched = new Map<string, Set<string>>();
  private readonly mcpSessionsOpen = new Gauge({
    name: 'td_mcp_sessions_open',
    help: 'MCP sessions (of /mcp and tool-dispatch mcp) opened through this coordinator and not ended through it; summed over coordinators, those open in the deployment.',
    registers: [this.registry],
  });
  private readonly mcpRequests = new Counter({
    name: 'td_mcp_requests_total',
    help: 'JSON-RPC messages MCP clients sent to this coordinator, by method (a client\'s answer to an elicitation: "response"; DELETE /mcp: "DELETE").',
    labelNames: ['method'] as const,
    registers: [this.registry],
  });
  private readonly workersAlive = new Gauge({
    name: 'td_workers_alive',
    help: 'Worker processes whose heartbeat is current.',
    registers: [this.registry],
  });

  constructor(options: MetricsOptions = {}) {
    if (options.defaultMetrics ?? true) addDefaultMetrics(this.registry);
    this.knownTools(options.tools ?? BUILTIN_TOOL_NAMES);
    this.calls.labels(UNKNOWN_TOOL_LABEL, 'unknown').inc(0);
    for (const reason of REFUSAL_STATUSES) this.refusals.labels(reason).inc(0);
    for (const method of MCP_METHODS) this.mcpRequests.labels(method).inc(0);
  }

  /** An MCP session opened (+1) or ended (-1) through this coordinator. */
  mcpSessions(delta: number): void {
    this.mcpSessionsOpen.inc(delta);
  }

  /** One JSON-RPC message of an MCP client, by method (unknown methods under `other`). */
  mcpRequest(method: string): void {
    this.mcpRequests.labels(MCP_METHODS.includes(method) ? method : 'other').inc();
  }

  /**
   * Starts each tool's series at 0, for every status a call of it can end with (`unknown` is
   * counted under `_unknown`), so a dashboard shows 0 rather than "No data" before its first call.
   */
  knownTools(names: Iterable<string>): void {
    for (const name of names) {
      const tool = this.tools.label(name);
      for (const status of STATUSES) if (status !== 'unknown') this.calls.labels(tool, status).inc(0);
      // Histogram.zero() would also reset a tool's observations: only for a tool without any.
      if (!this.timedTools.has(tool)) this.callDuration.zero({ tool });
      this.timedTools.add(tool);
    }
  }

  /**
   * Records one answered call: td_calls_total; the duration when it ran (ok, error); a dedupe
   * or cache hit; and a refusal for refused/unknown/invalid/denied, under `reason` when given
   * (e.g. a FailureKind such as `not_loaded`), else the status.
   */
  recordCall(result: Pick<CallResult, 'name' | 'status' | 'durationMs'>, reason?: string): void {
    const tool = result.status === 'unknown' ? UNKNOWN_TOOL_LABEL : this.tools.label(result.name);
    this.calls.labels(tool, result.status).inc();
    if (hasRun(result.status)) {
      this.callDuration.labels(tool).observe(Math.max(0, result.durationMs) / 1000);
      this.timedTools.add(tool);
    }
    if (result.status === 'deduped') this.dedupeHits.inc();
    else if (result.status === 'cached') this.cacheHits.inc();
    else if (isRefusal(result.status)) this.refusals.labels(reason ?? result.status).inc();
  }

  /**
   * A find_tools search (a query answered ok) counts in td_find_tools_searches_total and
   * remembers the tools it returned for the run; a later call of the run of one of them counts in
   * td_find_tools_search_hits_total (a search's own round included: the call comes after it).
   */
  recordSearch(
    result: Pick<CallResult, 'name' | 'status' | 'output'>,
    args: Record<string, unknown>,
    ref: { session: string; run: string },
  ): void {
    const key = `${ref.session}\u0000${ref.run}`;
    if (result.name === 'find_tools') {
      if (result.status !== 'ok' || typeof args.query !== 'string') return;
      this.searches.inc();
      const tools = (result.output as { tools?: Array<{ name?: unknown }> } | undefined)?.tools ?? [];
      const found = this.searched.get(key) ?? new Set<string>();
      for (const t of tools) if (typeof t?.name === 'string') found.add(t.name);
      this.searched.delete(key);
      this.searched.set(key, found);
      if (this.searched.size > MAX_SEARCHED_RUNS) this.searched.delete(this.searched.keys().next().value as string);
      return;
    }
    if (this.searched.get(key)?.has(result.name)) this.searchHits.inc();
  }

  /** A refusal that is not one call's status (e.g. admission control); calls go through `recordCall`. */
  recordRefusal(reason: string): void {
    this.refusals.labels(reason).inc();
  }

  roundStarted(): void {
    this.roundsInProgress.inc();
  }

  roundEnded(): void {
    this.roundsInProgress.dec();
  }

  /** For a source that knows the count (the engine's `roundsInProgress` hook). */
  setRoundsInProgress(n: number): void {
    this.roundsInProgress.set(n);
  }

  setRoundsWaiting(n: number): void {
    this.roundsWaiting.set(n);
  }

  confirmationRequested(): void {
    this.confirmationsPending.inc();
  }

  confirmationSettled(): void {
    this.confirmationsPending.dec();
  }

  /** A grant made, used or revoked (the engine's `grants` hook). */
  grantEvent(event: 'created' | 'used' | 'revoked'): void {
    this.grants.inc({ event });
  }

  /** One more (+1) or one fewer (-1) parked call waited on (the engine's `inputs` hook). */
  inputsWaiting(delta: number): void {
    this.inputsPending.inc(delta);
  }

  setConfirmationsPending(n: number): void {
    this.confirmationsPending.set(n);
  }

  /** `shard` only with more than one shard: one shard's series keep their labels of before shards. */
  setQueueJobs(queue: string, state: QueueJobState | string, n: number, shard?: number): void {
    this.queueJobs.set(shard === undefined ? { queue, state } : { queue, state, shard: String(shard) }, n);
  }

  /** Takes `Queue.getJobCounts()` as it comes. */
  setQueueJobCounts(queue: string, counts: Readonly<Record<string, number>>, shard?: number): void {
    for (const [state, n] of Object.entries(counts)) this.setQueueJobs(queue, state, n, shard);
  }

  setWorkersAlive(n: number): void {
    this.workersAlive.set(n);
  }

  /** Runs `hook` before each scrape; one that fails leaves the gauges it fills at their last values. */
  onScrape(hook: ScrapeHook): void {
    this.hooks.push(hook);
  }

  /** The exposition for GET /metrics (content type `contentType`). */
  async metrics(): Promise<string> {
    await runScrapeHooks(this.hooks);
    return this.registry.metrics();
  }
}

function hasRun(status: Status): boolean {
  return status === 'ok' || status === 'error';
}

function isRefusal(status: Status): boolean {
  return status === 'refused' || status === 'unknown' || status === 'invalid' || status === 'denied';
}

/** Runs every hook, each failure kept to itself so one unreachable source never blanks /metrics. */
export async function runScrapeHooks(hooks: readonly ScrapeHook[]): Promise<void> {
  await Promise.allSettled(hooks.map(async (hook) => hook()));
}
