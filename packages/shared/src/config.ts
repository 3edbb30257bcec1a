// long-file: every TD_* setting is read and checked here, once (STYLE.md "Options")
import { ConfigError } from './errors.js';
import { budgetValueProblem, type ResultBudget } from './result-budget.js';
import { type SandboxNet, sandboxNetOf } from './sandbox-net.js';

/** Defaults and limits. Every limit is documented in the README and in `--help`. */
export const MAX_CONCURRENT_TOOLS = 5;
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
export const DEFAULT_CONFIRM_TIMEOUT_MS = 300_000;
/** How long a parked call (interactive or client tool) waits for its answer (TD_INPUT_TIMEOUT_MS). */
export const DEFAULT_INPUT_TIMEOUT_MS = 600_000;
/** TD_MCP_RUN_IDLE_MS (v1.3): a 2026-07-28 MCP session's run `mcp-<n>` ends after this long without a call. */
export const DEFAULT_MCP_RUN_IDLE_MS = 600_000;
/** TD_MCP_TASK_AFTER_MS (v1.3): a tools/call of a client with the MCP tasks extension becomes a task past this long. */
export const DEFAULT_MCP_TASK_AFTER_MS = 2_000;
export const RESULT_CACHE_TTL_MS = 30 * 60_000;
export const EVENT_REPLAY_MS = 15 * 60_000;
export const DEFAULT_WORKER_CONCURRENCY = 16;
/** Serial-queue jobs one worker runs at once, each of a different run (API.md v1.1; the coordinator keeps a run to one). */
export const DEFAULT_WORKER_SERIAL_CONCURRENCY = 8;
/** Most shards of each execution queue (TD_QUEUE_SHARDS): each is a BullMQ worker per class in every worker process. */
export const MAX_QUEUE_SHARDS = 64;
/**
 * TD_SESSION_TTL_MS: a session idle this long is dropped with everything scoped to it (state,
 * histories, dedupe maps, rounds, idempotency keys, events), in Redis (a sliding TTL refreshed on
 * write) and in embedded mode (swept from memory) alike.
 */
export const DEFAULT_SESSION_TTL_MS = 7 * 24 * 60 * 60_000;
/**
 * TD_ROUND_RETENTION_MS (v1.3): how long a finished round's answer (what `GET .../rounds/{round}`
 * serves) and its Idempotency-Key record are kept after the round ends; then 404, and the key is free.
 */
export const DEFAULT_ROUND_RETENTION_MS = 24 * 60 * 60_000;
/** TD_FINISHED_JOB_RETENTION_MS: how long BullMQ keeps a completed job (an enqueue under its id is a no-op meanwhile). */
export const DEFAULT_FINISHED_JOB_RETENTION_MS = 60 * 60_000;
/** TD_OUTCOME_AFTER_COMMIT_TTL_MS: how long a committed round's outcome hash stays (a redelivery after a worker died reads it). */
export const DEFAULT_OUTCOME_AFTER_COMMIT_TTL_MS = 10 * 60_000;

/**
 * TD_JOB_CALLS: the most calls one BullMQ job carries in all (DESIGN.md "Fewer queue hops per
 * call"): the concurrent calls admitted in one tick, of every run, share a job per queue shard up to
 * it, each run's share within its own limit (MAX_CONCURRENT_TOOLS, applied before); 1 is one job
 * per call. The default is a worker's default concurrency, so one job fits one worker's places.
 */
export const DEFAULT_JOB_CALLS = DEFAULT_WORKER_CONCURRENCY;
/** Most TD_JOB_CALLS (v1.1's bound). */
export const MAX_JOB_CALLS = 64;

/** TD_MAX_ROUNDS_IN_FLIGHT: rounds one coordinator runs at once; more wait their turn in arrival order. */
export const DEFAULT_MAX_ROUNDS_IN_FLIGHT = 1000;
/** TD_ROUND_QUEUE_MS: how long a round may wait for its turn; then 503 overloaded (nothing of it begun). */
export const DEFAULT_ROUND_QUEUE_MS = 30_000;

/** TD_REDIS_REPLICA_ACKS: replicas that must acknowledge each durability point (0: none asked, today's behaviour). */
export const DEFAULT_REDIS_REPLICA_ACKS = 0;
/** Most replicas TD_REDIS_REPLICA_ACKS may ask for. */
export const MAX_REDIS_REPLICA_ACKS = 16;
/** TD_REDIS_WAIT_MS: how long a durability point waits for those acknowledgements (Redis WAIT's timeout). */
export const DEFAULT_REDIS_WAIT_MS = 1_000;
/** TD_REDIS_COMMAND_TIMEOUT_MS: the deadline of every (non-blocking) Redis command. */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 2_000;
/** Shortest TD_REDIS_COMMAND_TIMEOUT_MS: below it a loaded Redis answering normally would be taken for a stalled one. */
export const MIN_REDIS_COMMAND_TIMEOUT_MS = 100;

/** Largest HTTP request body; more is 413. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Most calls in one round; more is 400. */
export const MAX_CALLS_PER_ROUND = 128;
/** Largest args of one call (canonical JSON); more ends that call `invalid`. */
export const MAX_ARGS_BYTES = 256 * 1024;
/** Deepest nesting of one call's args; more ends that call `invalid`. */
export const MAX_ARGS_DEPTH = 32;
/** Largest output of one call (JSON); more ends that call `error`/`handler_error`. */
export const MAX_OUTPUT_BYTES = 2 * 1024 * 1024;
/** Cap on each of a command's stdout and stderr, and on one file read or HTTP body; the rest is cut and flagged. */
export const MAX_STREAM_BYTES = 512 * 1024;

export type Mode = 'embedded' | 'distributed';

export interface DispatchConfig {
  mode: Mode;
  redisUrl: string | undefined;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's seed nodes (host:port or redis(s):// URLs); distributed mode on it. */
  redisClusterNodes: string[] | undefined;
  prefix: string;
  workspaceRoot: string;
  apiToken: string | undefined;
  /** TD_API_TOKENS (v1.2): path of the JSON file of tokens with a tenant and a role; never with apiToken. */
  apiTokensFile: string | undefined;
  httpAllow: string[];
  searchUrl: string | undefined;
  confirmTimeoutMs: number;
  /** TD_INPUT_TIMEOUT_MS: a parked call unanswered this long ends `error`/`timeout`. */
  inputTimeoutMs: number;
  /** TD_MCP_RUN_IDLE_MS (v1.3): a 2026-07-28 MCP client's current run `mcp-<n>` ends after this long without a call. */
  mcpRunIdleMs: number;
  /** TD_MCP_TASK_AFTER_MS (v1.3): a 2026 tasks-extension client's tools/call still running this long is answered as a task. */
  mcpTaskAfterMs: number;
  maxConcurrentTools: number;
  workerConcurrency: number;
  workerSerialConcurrency: number;
  /**
   * TD_QUEUE_SHARDS: shards of each execution queue, each its own hash slot; a run's jobs all on
   * one; every worker consumes every shard. The same for every process of a deployment.
   */
  queueShards: number;
  /** TD_SESSION_TTL_MS: how long an idle session (and all its state) is kept. */
  sessionTtlMs: number;
  /** TD_ROUND_RETENTION_MS (v1.3): how long a finished round's answer and its idempotency record are kept after it ends. */
  roundRetentionMs: number;
  /**
   * TD_REDIS_TLS_CA: path of a PEM file of the CA (or CAs) that signed Redis's certificate, trusted
   * (in addition to Node's roots) by every Redis connection of a `rediss://` URL, and only by those.
   */
  redisTlsCaFile: string | undefined;
  /**
   * TD_FINISHED_JOB_RETENTION_MS and TD_OUTCOME_AFTER_COMMIT_TTL_MS: how long the queue's
   * bookkeeping outlives a committed round in Redis (completed BullMQ jobs, outcome hashes). Shorter
   * gives Redis's key count back sooner; each must stay well above JOB_LOCK_MS + STALLED_INTERVAL_MS
   * (a job redelivered after its worker died must still find them).
   */
  finishedJobRetentionMs: number;
  outcomeAfterCommitTtlMs: number;
  /**
   * TD_JOB_NAME: the name of each BullMQ job, as the dashboard shows it, from a template of
   * JOB_NAME_FIELDS (default `{tools}`: the tools of the calls it carries, joined by `+`).
   */
  jobName: string;
  /** TD_JOB_CALLS: the most calls one BullMQ job carries (1: one job per call; serial calls are always alone). */
  jobCalls: number;
  /** TD_MAX_ROUNDS_IN_FLIGHT and TD_ROUND_QUEUE_MS: the coordinator's admission of rounds (see RoundAdmission). */
  maxRoundsInFlight: number;
  roundQueueMs: number;
  /**
   * TD_RESULT_BUDGET_CALL and TD_RESULT_BUDGET_ROUND: the result budget of sessions that set none
   * (API.md v1.2; empty: no budget, outputs go as they are).
   */
  resultBudget: ResultBudget;
  /**
   * TD_REDIS_REPLICA_ACKS and TD_REDIS_WAIT_MS: replicas that must acknowledge (Redis WAIT) a
   * round's begin, a side effect's start and a round's commit before anything acts on them, and
   * how long to wait for them. 0 asks for none (no WAIT is sent).
   */
  redisReplicaAcks: number;
  redisWaitMs: number;
  /** TD_REDIS_COMMAND_TIMEOUT_MS: deadline of every Redis command (blocking reads and subscribers excepted). */
  redisCommandTimeoutMs: number;
}

/** What a TD_JOB_NAME template may name: a job's tools, and the session, run and round of its first call, and its queue. */
export const JOB_NAME_FIELDS = ['tools', 'session', 'run', 'round', 'queue'] as const;
export const DEFAULT_JOB_NAME = '{tools}';
/** Longest TD_JOB_NAME template. */
export const MAX_JOB_NAME_LENGTH = 200;

function jobNameOf(raw: string | undefined): string {
  if (raw === undefined || raw === '') return DEFAULT_JOB_NAME;
  if (raw.length > MAX_JOB_NAME_LENGTH)
    throw new Error(`TD_JOB_NAME must be at most ${MAX_JOB_NAME_LENGTH} characters, got ${raw.length}`);
  for (const [, field] of raw.matchAll(/\{([^}]*)\}/g)) {
    if (!(JOB_NAME_FIELDS as readonly string[]).includes(field ?? ''))
      throw new Error(`TD_JOB_NAME names {${field}}; it may name ${JOB_NAME_FIELDS.map((f) => `{${f}}`).join(', ')}`);
  }
  return raw;
}

export type DispatchConfigOptions = Partial<DispatchConfig>;

function positiveInt(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  // A ConfigError: the CLI exits 2 naming the setting.
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

function budgetOf(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  const problem = budgetValueProblem(Number.isFinite(n) && raw.trim() !== '' ? n : raw, name);
  if (problem) throw new ConfigError(problem);
  return n;
}

function resultBudgetOf(env: NodeJS.ProcessEnv): ResultBudget {
  const call = budgetOf(env.TD_RESULT_BUDGET_CALL, 'TD_RESULT_BUDGET_CALL');
  const round = budgetOf(env.TD_RESULT_BUDGET_ROUND, 'TD_RESULT_BUDGET_ROUND');
  return { ...(call !== undefined ? { call } : {}), ...(round !== undefined ? { round } : {}) };
}

function queueShardsOf(raw: string | undefined): number {
  const n = positiveInt(raw, 1, 'TD_QUEUE_SHARDS');
  if (n > MAX_QUEUE_SHARDS) throw new Error(`TD_QUEUE_SHARDS must be at most ${MAX_QUEUE_SHARDS}, got ${n}`);
  return n;
}

function jobCallsOf(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_JOB_CALLS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_JOB_CALLS)
    throw new ConfigError(`TD_JOB_CALLS must be an integer from 1 to ${MAX_JOB_CALLS}, got ${JSON.stringify(raw)}`);
  return n;
}

function nonNegativeInt(raw: string | undefined, fallback: number, name: string, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new ConfigError(`${name} must be an integer from 0 to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * The three durability settings (API.md v1.2), checked together: a WAIT is one Redis command, so
 * it must be able to end (TD_REDIS_WAIT_MS) before its own deadline (TD_REDIS_COMMAND_TIMEOUT_MS).
 */
export function redisDurabilityOf(
  options: DispatchConfigOptions,
  env: NodeJS.ProcessEnv,
): Pick<DispatchConfig, 'redisReplicaAcks' | 'redisWaitMs' | 'redisCommandTimeoutMs'> {
  const int = (raw: string | undefined, fallback: number, name: string) => {
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1)
      throw new ConfigError(`${name} must be a positive integer (ms), got ${JSON.stringify(raw)}`);
    return n;
  };
  const redisReplicaAcks =
    options.redisReplicaAcks ??
    nonNegativeInt(
      env.TD_REDIS_REPLICA_ACKS,
      DEFAULT_REDIS_REPLICA_ACKS,
      'TD_REDIS_REPLICA_ACKS',
      MAX_REDIS_REPLICA_ACKS,
    );
  const redisWaitMs = options.redisWaitMs ?? int(env.TD_REDIS_WAIT_MS, DEFAULT_REDIS_WAIT_MS, 'TD_REDIS_WAIT_MS');
  const redisCommandTimeoutMs =
    options.redisCommandTimeoutMs ??
    int(env.TD_REDIS_COMMAND_TIMEOUT_MS, DEFAULT_REDIS_COMMAND_TIMEOUT_MS, 'TD_REDIS_COMMAND_TIMEOUT_MS');
  if (redisCommandTimeoutMs < MIN_REDIS_COMMAND_TIMEOUT_MS)
    throw new ConfigError(
      `TD_REDIS_COMMAND_TIMEOUT_MS must be at least ${MIN_REDIS_COMMAND_TIMEOUT_MS} ms, got ${redisCommandTimeoutMs}`,
    );
  if (redisReplicaAcks > 0 && redisWaitMs >= redisCommandTimeoutMs)
    throw new ConfigError(
      `TD_REDIS_WAIT_MS (${redisWaitMs}) must be below TD_REDIS_COMMAND_TIMEOUT_MS (${redisCommandTimeoutMs}): a WAIT is a Redis command and is cut at that deadline`,
    );
  return { redisReplicaAcks, redisWaitMs, redisCommandTimeoutMs };
}

/** Reads the environment (API.md's table) and applies defaults; options win over the environment. */
export function resolveConfig(
  options: DispatchConfigOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): DispatchConfig {
  const redisUrl = options.redisUrl ?? (env.REDIS_URL || undefined);
  const redisClusterNodes =
    options.redisClusterNodes ??
    (env.REDIS_CLUSTER_NODES
      ? env.REDIS_CLUSTER_NODES.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined);
  if (redisUrl && redisClusterNodes?.length)
    throw new ConfigError('set REDIS_URL or REDIS_CLUSTER_NODES, not both (one Redis, or the seed nodes of a cluster)');
  const apiToken = options.apiToken ?? (env.TD_API_TOKEN || undefined);
  const apiTokensFile = options.apiTokensFile ?? (env.TD_API_TOKENS || undefined);
  if (apiToken && apiTokensFile)
    throw new ConfigError(
      'set TD_API_TOKEN or TD_API_TOKENS, not both (one shared token, or a file of tokens with tenants and roles)',
    );
  const prefix = options.prefix ?? (env.TD_PREFIX || 'td');
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix))
    throw new Error(`TD_PREFIX must match [A-Za-z0-9_.-]{1,64}, got ${prefix}`);
  return {
    mode: options.mode ?? (redisUrl || redisClusterNodes?.length ? 'distributed' : 'embedded'),
    redisUrl,
    redisClusterNodes: redisClusterNodes?.length ? redisClusterNodes : undefined,
    prefix,
    workspaceRoot: options.workspaceRoot ?? (env.TD_WORKSPACE_ROOT || './.workspaces'),
    apiToken,
    apiTokensFile,
    httpAllow:
      options.httpAllow ??
      (env.TD_HTTP_ALLOW ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    searchUrl: options.searchUrl ?? (env.TD_SEARCH_URL || undefined),
    confirmTimeoutMs:
      options.confirmTimeoutMs ??
      positiveInt(env.TD_CONFIRM_TIMEOUT_MS, DEFAULT_CONFIRM_TIMEOUT_MS, 'TD_CONFIRM_TIMEOUT_MS'),
    inputTimeoutMs:
      options.inputTimeoutMs ?? positiveInt(env.TD_INPUT_TIMEOUT_MS, DEFAULT_INPUT_TIMEOUT_MS, 'TD_INPUT_TIMEOUT_MS'),
    mcpRunIdleMs:
      options.mcpRunIdleMs ?? positiveInt(env.TD_MCP_RUN_IDLE_MS, DEFAULT_MCP_RUN_IDLE_MS, 'TD_MCP_RUN_IDLE_MS'),
    mcpTaskAfterMs:
      options.mcpTaskAfterMs ??
      nonNegativeInt(env.TD_MCP_TASK_AFTER_MS, DEFAULT_MCP_TASK_AFTER_MS, 'TD_MCP_TASK_AFTER_MS', 3_600_000),
    maxConcurrentTools:
      options.maxConcurrentTools ?? positiveInt(env.MAX_CONCURRENT_TOOLS, MAX_CONCURRENT_TOOLS, 'MAX_CONCURRENT_TOOLS'),
    workerConcurrency:
      options.workerConcurrency ??
      positiveInt(env.TD_WORKER_CONCURRENCY, DEFAULT_WORKER_CONCURRENCY, 'TD_WORKER_CONCURRENCY'),
    workerSerialConcurrency:
      options.workerSerialConcurrency ??
      positiveInt(env.TD_WORKER_SERIAL_CONCURRENCY, DEFAULT_WORKER_SERIAL_CONCURRENCY, 'TD_WORKER_SERIAL_CONCURRENCY'),
    queueShards: options.queueShards ?? queueShardsOf(env.TD_QUEUE_SHARDS),
    sessionTtlMs:
      options.sessionTtlMs ?? positiveInt(env.TD_SESSION_TTL_MS, DEFAULT_SESSION_TTL_MS, 'TD_SESSION_TTL_MS'),
    roundRetentionMs:
      options.roundRetentionMs ??
      positiveInt(env.TD_ROUND_RETENTION_MS, DEFAULT_ROUND_RETENTION_MS, 'TD_ROUND_RETENTION_MS'),
    redisTlsCaFile: options.redisTlsCaFile ?? (env.TD_REDIS_TLS_CA || undefined),
    jobName: options.jobName ?? jobNameOf(env.TD_JOB_NAME),
    jobCalls: options.jobCalls ?? jobCallsOf(env.TD_JOB_CALLS),
    maxRoundsInFlight:
      options.maxRoundsInFlight ??
      positiveInt(env.TD_MAX_ROUNDS_IN_FLIGHT, DEFAULT_MAX_ROUNDS_IN_FLIGHT, 'TD_MAX_ROUNDS_IN_FLIGHT'),
    roundQueueMs:
      options.roundQueueMs ?? positiveInt(env.TD_ROUND_QUEUE_MS, DEFAULT_ROUND_QUEUE_MS, 'TD_ROUND_QUEUE_MS'),
    finishedJobRetentionMs:
      options.finishedJobRetentionMs ??
      positiveInt(env.TD_FINISHED_JOB_RETENTION_MS, DEFAULT_FINISHED_JOB_RETENTION_MS, 'TD_FINISHED_JOB_RETENTION_MS'),
    resultBudget: options.resultBudget ?? resultBudgetOf(env),
    outcomeAfterCommitTtlMs:
      options.outcomeAfterCommitTtlMs ??
      positiveInt(
        env.TD_OUTCOME_AFTER_COMMIT_TTL_MS,
        DEFAULT_OUTCOME_AFTER_COMMIT_TTL_MS,
        'TD_OUTCOME_AFTER_COMMIT_TTL_MS',
      ),
    ...redisDurabilityOf(options, env),
  };
}

/** TD_SANDBOX_MEMORY_MB default: a command's memory (all its processes) before it is killed whole. */
export const DEFAULT_SANDBOX_MEMORY_MB = 1024;
/** TD_SANDBOX_PIDS default: processes and threads of one command at once. */
export const DEFAULT_SANDBOX_PIDS = 256;
/** TD_SANDBOX_FILE_MB default: the largest file a command writes. */
export const DEFAULT_SANDBOX_FILE_MB = 1024;
/** Largest value of each TD_SANDBOX_* limit (MB, or processes). */
export const MAX_SANDBOX_LIMIT = 1_048_576;

/** TD_SANDBOX_NET (API.md v1.3): none (own loopback only), host (the worker's network) or an allow list of host[:port] patterns. */

/** The TD_SANDBOX* settings of a process that runs tools (API.md "Sandboxed commands"). */
export interface SandboxConfig {
  /** TD_SANDBOX: `on` (default) or `off` (as before v1.3). */
  mode: 'on' | 'off';
  /** TD_SANDBOX_READ: absolute host paths bound read-only into every sandbox. */
  read: string[];
  net: SandboxNet;
  memoryMb: number;
  pids: number;
  fileMb: number;
}

function sandboxLimitOf(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_SANDBOX_LIMIT)
    throw new ConfigError(`${name} must be an integer from 1 to ${MAX_SANDBOX_LIMIT}, got ${JSON.stringify(raw)}`);
  return n;
}

/** TD_SANDBOX_READ: a comma list of absolute paths (no `..`). */
export function sandboxReadOf(raw: string | undefined, name = 'TD_SANDBOX_READ'): string[] {
  const paths = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = paths.find((p) => !p.startsWith('/') || p.split('/').includes('..') || p.includes('\0'));
  if (bad !== undefined)
    throw new ConfigError(`${name} takes absolute host paths without '..', got ${JSON.stringify(bad)}`);
  return paths.map((p) => (p.length > 1 ? p.replace(/\/+$/, '') : p));
}

/**
 * The TD_SANDBOX* settings, checked once (API.md v1.3): a bad value is a ConfigError (`dev` and
 * `worker` exit 2 naming it); options win over the environment.
 */
export function resolveSandboxConfig(
  options: Partial<SandboxConfig> = {},
  env: NodeJS.ProcessEnv = process.env,
): SandboxConfig {
  const raw = env.TD_SANDBOX;
  let mode = options.mode;
  if (mode === undefined) {
    if (raw === undefined || raw === '' || raw === 'on') mode = 'on';
    else if (raw === 'off') mode = 'off';
    else throw new ConfigError(`TD_SANDBOX must be on or off, got ${JSON.stringify(raw)}`);
  }
  return {
    mode,
    read: options.read ?? sandboxReadOf(env.TD_SANDBOX_READ),
    net: options.net ?? sandboxNetOf(env.TD_SANDBOX_NET),
    memoryMb:
      options.memoryMb ?? sandboxLimitOf(env.TD_SANDBOX_MEMORY_MB, DEFAULT_SANDBOX_MEMORY_MB, 'TD_SANDBOX_MEMORY_MB'),
    pids: options.pids ?? sandboxLimitOf(env.TD_SANDBOX_PIDS, DEFAULT_SANDBOX_PIDS, 'TD_SANDBOX_PIDS'),
    fileMb: options.fileMb ?? sandboxLimitOf(env.TD_SANDBOX_FILE_MB, DEFAULT_SANDBOX_FILE_MB, 'TD_SANDBOX_FILE_MB'),
  };
}
