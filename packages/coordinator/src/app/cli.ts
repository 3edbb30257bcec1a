import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  DEFAULT_CONFIRM_TIMEOUT_MS,
  DEFAULT_INPUT_TIMEOUT_MS,
  DEFAULT_JOB_CALLS,
  DEFAULT_MAX_ROUNDS_IN_FLIGHT,
  DEFAULT_MCP_RUN_IDLE_MS,
  DEFAULT_REDIS_COMMAND_TIMEOUT_MS,
  DEFAULT_REDIS_REPLICA_ACKS,
  DEFAULT_REDIS_WAIT_MS,
  DEFAULT_ROUND_QUEUE_MS,
  DEFAULT_SANDBOX_FILE_MB,
  DEFAULT_SANDBOX_MEMORY_MB,
  DEFAULT_SANDBOX_PIDS,
  type DispatchConfig,
  MAX_ARGS_BYTES,
  MAX_ARGS_DEPTH,
  MAX_BODY_BYTES,
  MAX_CALLS_PER_ROUND,
  MAX_JOB_CALLS,
  MAX_OUTPUT_BYTES,
  MAX_QUEUE_SHARDS,
  MAX_REDIS_REPLICA_ACKS,
  MAX_RESULT_BUDGET,
  MAX_STREAM_BYTES,
  MCP_PROVIDER_BUDGET,
  MIN_RESULT_BUDGET,
  resolveConfig,
} from '@tool-dispatch/shared';
import { initTracing } from '@tool-dispatch/shared/tracing';
import { WorkerMetrics } from '@tool-dispatch/worker';
import { Command, InvalidArgumentError, Option } from 'commander';
import { LISTEN_BACKLOG } from '../http/limits.js';
import { runDemo } from './demo.js';
import { distributedCoordinator, runWorkerProcess } from './distributed.js';
import { createEngine } from './embedded.js';
import { namedLimitsFrom } from './limits-config.js';
import { mcpServersFrom, startMcpHub } from './mcp.js';
import { runMcpStdio } from './mcp-stdio.js';
import { CoordinatorMetrics } from './metrics.js';
import { mcpHooks, observabilityHooks } from './observe.js';
import { sandboxConfigFrom, startSandbox } from './sandbox.js';
import { exitOnSignals, startCoordinator } from './serve.js';

const ENVIRONMENT = `
Environment (docs/api.md):
  REDIS_URL              distributed mode over BullMQ on this Redis; unset = embedded mode
  REDIS_CLUSTER_NODES    host:port,... (or redis(s):// URLs) of a Redis Cluster: distributed mode on
                         it (set this or REDIS_URL, not both)
  PORT                   HTTP port (coordinator 8080; worker metrics 9464, 0 = off)
  TD_PREFIX              namespace of every queue and Redis key (default td); same as --prefix
  TD_WORKSPACE_ROOT      directory of session workspaces (default ./.workspaces)
  TD_API_TOKEN           when set, /v1/* and /admin/* need Authorization: Bearer <token>
  TD_API_TOKENS          JSON file {"tokens": [{name, sha256, tenant, role}]}: tokens with a tenant and a
                         role (backend, approver, operator), instead of TD_API_TOKEN; re-read on SIGHUP
  TD_HTTP_ALLOW          host[:port] list http_request/fetch_page may reach on private addresses
  TD_SEARCH_URL          SearxNG endpoint for search_web
  TD_SANDBOX             on (default): each run_command in a sandbox of its own (bubblewrap); off: as
                         before v1.3; anything else exits 2
  TD_SANDBOX_READ        host paths bound read-only into every sandbox (comma list)
  TD_SANDBOX_NET         none (default: own loopback only), host, or host[:port] patterns via the proxy
  TD_SANDBOX_MEMORY_MB   memory of one command before it is killed whole (default ${DEFAULT_SANDBOX_MEMORY_MB})
  TD_SANDBOX_PIDS        processes and threads of one command at once (default ${DEFAULT_SANDBOX_PIDS})
  TD_SANDBOX_FILE_MB     largest file one command writes (default ${DEFAULT_SANDBOX_FILE_MB})
  TD_CONFIRM_TIMEOUT_MS  confirmation wait before "denied" (default ${DEFAULT_CONFIRM_TIMEOUT_MS})
  TD_INPUT_TIMEOUT_MS    how long a parked call (ask_user, interactive or client tool) waits for
                         its answer before it ends error/timeout (default ${DEFAULT_INPUT_TIMEOUT_MS})
  TD_MCP_RUN_IDLE_MS     a 2026-07-28 MCP client's run mcp-<n> ends after this long without a call
                         (default ${DEFAULT_MCP_RUN_IDLE_MS})
  TD_MCP_TASK_AFTER_MS   a tools/call of an MCP tasks-extension client still running this long (or
                         waiting for a person) is answered as a task (0-3600000, default 2000)
  MAX_CONCURRENT_TOOLS   concurrent calls in flight per run (default 5)
  TD_WORKER_CONCURRENCY  concurrent-queue jobs per worker process (default 16)
  TD_WORKER_SERIAL_CONCURRENCY  serial-queue jobs per worker process, each of a different run (default 8)
  TD_QUEUE_SHARDS        shards of each execution queue, each its own Redis Cluster slot (1-${MAX_QUEUE_SHARDS},
                         default 1); the same for every coordinator and worker of a prefix
  TD_JOB_NAME            BullMQ job names on the dashboard: a template of {tools}, {session}, {run},
                         {round}, {queue} (default {tools})
  TD_JOB_CALLS           most calls one queue job carries: the concurrent calls admitted together, of
                         every run, share a job (1-${MAX_JOB_CALLS}, default ${DEFAULT_JOB_CALLS}; 1 = one job per call)
  TD_MAX_ROUNDS_IN_FLIGHT  rounds one coordinator runs at once; more wait their turn in arrival order
                         (default ${DEFAULT_MAX_ROUNDS_IN_FLIGHT})
  TD_ROUND_QUEUE_MS      how long a round may wait for its turn before 503 overloaded, nothing of it
                         begun (default ${DEFAULT_ROUND_QUEUE_MS})
  TD_MCP_CONFIG          JSON file of MCP servers ({"mcpServers": {...}}) every worker (and dev)
                         connects to; their tools are mcp__<server>__<tool> (a bad file: exit 2)
  TD_LIMITS              JSON file of limits held across the deployment: {"tools"?: {"<name or glob>": L},
                         "servers"?: {"<MCP server>": L}, "tenants"?: {"<tenant>" | "*": L}, "maxWaitMs"?}
                         with L {"concurrency"?: n, "rate"?: "<n>/s|m|h"}; a call over a limit waits its
                         turn up to maxWaitMs (default 30000) or its deadline, then ends rate_limited
                         (a bad file: exit 2)
  TD_SESSION_TTL_MS      an idle session is dropped with all its state after this (default 7 days)
  TD_ROUND_RETENTION_MS  a finished round's answer (GET .../rounds/{round}) and its Idempotency-Key
                         are kept this long after it ends, then 404 (default 86400000, one day)
  TD_REDIS_TLS_CA        PEM file of the CA Redis's certificate is signed by (rediss:// URLs only)
  TD_REDIS_REPLICA_ACKS  replicas that must acknowledge (WAIT) a round's begin, a serial call's start
                         and a round's commit, 0..${MAX_REDIS_REPLICA_ACKS} (default ${DEFAULT_REDIS_REPLICA_ACKS}: no WAIT);
                         not acknowledged: 503 unavailable, or the call ends error/unavailable unrun
  TD_REDIS_WAIT_MS       how long each WAIT waits (default ${DEFAULT_REDIS_WAIT_MS}; below the command deadline)
  TD_REDIS_COMMAND_TIMEOUT_MS  deadline of every Redis command; the cluster slot map is refreshed
                         meanwhile (default ${DEFAULT_REDIS_COMMAND_TIMEOUT_MS}, at least 100)
  TD_FINISHED_JOB_RETENTION_MS  how long completed queue jobs stay in Redis (default 1 hour)
  TD_OUTCOME_AFTER_COMMIT_TTL_MS  how long a committed round's outcome hash stays (default 10 minutes);
                         keep both well above 10 s (a job redelivered after its worker died reads them)
  TD_RESULT_BUDGET_CALL  result budget of a session that sets none: characters of one call's output
                         a model gets; past it the output is written to .tool-results/ in the workspace
                         and a preview goes instead (${MIN_RESULT_BUDGET}-${MAX_RESULT_BUDGET}; unset = none;
                         sessions of provider mcp: ${MCP_PROVIDER_BUDGET.call})
  TD_RESULT_BUDGET_ROUND  the same for a round's outputs together, the largest cut first (unset = none;
                         provider mcp: ${MCP_PROVIDER_BUDGET.round})
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, ...  trace export (OTLP/HTTP)

Limits:
  request body           ${MAX_BODY_BYTES} bytes (413 beyond)
  calls per round        ${MAX_CALLS_PER_ROUND} (400 beyond)
  args of one call       ${MAX_ARGS_BYTES} bytes, nested ${MAX_ARGS_DEPTH} levels (that call ends "invalid")
  output of one call     ${MAX_OUTPUT_BYTES} bytes (that call ends "error"/handler_error)
  command output, file read, HTTP body  ${MAX_STREAM_BYTES} bytes each (cut, flagged "truncated")
  connections not yet taken  ${LISTEN_BACKLOG} (the listen backlog; Linux caps it at net.core.somaxconn)
`;

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

const log = (line: string) => process.stdout.write(`${line}\n`);

function configFrom(opts: { prefix?: string }): DispatchConfig {
  return resolveConfig(opts.prefix ? { prefix: opts.prefix } : {});
}

const envPort = (fallback: number) => (process.env.PORT ? port(process.env.PORT) : fallback);

// long: composition only, the embedded and the distributed start side by side, each a list of parts
async function serve(opts: { port?: number; host: string; prefix?: string; workers?: number }, withWorkers: boolean) {
  const signals = exitOnSignals(log);
  const config = configFrom(opts);
  const sandboxConfig = sandboxConfigFrom();
  const mcpServers = mcpServersFrom(process.env, log);
  const namedLimits = namedLimitsFrom(process.env);
  const listenPort = opts.port ?? envPort(8080);
  const tracing = initTracing('tool-dispatch-coordinator');
  const metrics = new CoordinatorMetrics();
  const hooks = observabilityHooks(tracing, metrics);
  if (config.mode === 'embedded') {
    const mcp = startMcpHub(mcpServers, log, packageVersion());
    if (mcp) metrics.watchMcp(mcp);
    const sandbox = await startSandbox(sandboxConfig, log);
    // Handlers run in this process: it is its own one worker, and counts its executions as one.
    const workerMetrics = new WorkerMetrics({ defaultMetrics: false });
    metrics.setWorkersAlive(1);
    const running = await startCoordinator({
      config,
      port: listenPort,
      host: opts.host,
      log,
      makeEngine: (c) =>
        createEngine({
          config: c,
          hooks,
          log,
          workerMetrics,
          sandbox,
          ...(mcp ? { mcp } : {}),
          ...(namedLimits ? { namedLimits } : {}),
        }),
      metricsText: async () => `${await metrics.metrics()}${await workerMetrics.metrics()}`,
      tracing,
      version: packageVersion(),
      mcpHooks: mcpHooks(tracing, metrics),
      onClosed: async () => {
        await mcp?.close();
        await sandbox.close();
        await tracing.shutdown();
      },
    });
    log(`embedded mode: handlers run in this process; workspaces under ${config.workspaceRoot}`);
    signals.ready(running.stop);
    return;
  }
  const workers = withWorkers ? (opts.workers ?? 2) : 0;
  // A coordinator runs no handlers: its workers connect to the servers (the file is still checked).
  const mcp = workers > 0 ? startMcpHub(mcpServers, log, packageVersion()) : undefined;
  if (mcp) metrics.watchMcp(mcp);
  const sandbox = workers > 0 ? await startSandbox(sandboxConfig, log) : undefined;
  const running = await distributedCoordinator({
    ...(mcp ? { mcp } : {}),
    ...(sandbox ? { sandbox } : {}),
    config,
    port: listenPort,
    host: opts.host,
    log,
    workers,
    tracing,
    metrics,
    hooks,
    version: packageVersion(),
    mcpHooks: mcpHooks(tracing, metrics),
    ...(namedLimits ? { namedLimits } : {}),
  });
  signals.ready(running.stop);
}

/** `tool-dispatch worker`. */
async function worker(opts: { port?: number; prefix?: string; concurrency?: number }) {
  const signals = exitOnSignals(log);
  const config = resolveConfig({
    ...(opts.prefix ? { prefix: opts.prefix } : {}),
    ...(opts.concurrency ? { workerConcurrency: opts.concurrency } : {}),
  });
  const sandboxConfig = sandboxConfigFrom();
  const mcpServers = mcpServersFrom(process.env, log);
  const sandbox = await startSandbox(sandboxConfig, log);
  const running = await runWorkerProcess({
    config,
    port: opts.port ?? envPort(9464),
    log,
    mcp: startMcpHub(mcpServers, log, packageVersion()),
    sandbox,
  });
  signals.ready(running.stop);
}

/** `tool-dispatch mcp`: the MCP server over stdio; every operator line on stderr (stdout is the protocol's). */
async function mcpStdio(opts: { prefix?: string; session?: string }) {
  const toStderr = (line: string) => process.stderr.write(`${line}\n`);
  const config = configFrom(opts);
  const mcpServers = mcpServersFrom(process.env, toStderr);
  // Distributed: the deployment's workers connect to the servers; embedded: this process does.
  const mcp = config.mode === 'embedded' ? startMcpHub(mcpServers, toStderr, packageVersion()) : undefined;
  await runMcpStdio({
    config,
    version: packageVersion(),
    log: toStderr,
    ...(opts.session ? { session: opts.session } : {}),
    ...(mcp ? { mcp } : {}),
  });
  process.exit(0);
}

/** This package's version, from the nearest package.json above this file (src under tsx, dist when bundled). */
function packageVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === '@tool-dispatch/coordinator' && pkg.version) return pkg.version;
    } catch {
      // no package.json here: look further up
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

function addMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(
      'Serve MCP over stdio for clients that launch a local process (embedded; a coordinator of the deployment when REDIS_URL or REDIS_CLUSTER_NODES is set).',
    )
    .addOption(
      new Option('--session <id>', 'act in this existing session (default: a new session mcp-<id> of provider mcp)'),
    )
    .addOption(new Option('--prefix <prefix>', 'namespace of queues and Redis keys (env TD_PREFIX, default td)'))
    .addHelpText('after', ENVIRONMENT)
    .action(mcpStdio);
}

export function buildCli(): Command {
  const program = new Command('tool-dispatch')
    .description('Checks, runs and records the tool calls of LLM agents: a coordinator and workers.')
    .version(`tool-dispatch ${packageVersion()}`, '-V, --version', 'print the version')
    .addHelpText('after', ENVIRONMENT)
    // A mistake gets one line and where to look, not the whole help.
    .showHelpAfterError('(tool-dispatch --help lists the commands, variables and limits)');

  program
    .command('coordinator')
    .description('Run the coordinator: HTTP API, pre-flight and commit (embedded execution without REDIS_URL).')
    .addOption(new Option('--port <n>', 'HTTP port (env PORT, default 8080)').argParser(port))
    .addOption(new Option('--host <host>', 'address to listen on').default('0.0.0.0'))
    .addOption(new Option('--prefix <prefix>', 'namespace of queues and Redis keys (env TD_PREFIX, default td)'))
    .addHelpText('after', ENVIRONMENT)
    .action((opts) => serve(opts, false));

  program
    .command('worker')
    .description('Run a worker: consumes the concurrent and serial queues and runs handlers (needs REDIS_URL).')
    .addOption(
      new Option('--port <n>', 'port of /metrics and /healthz (env PORT, default 9464; 0 = off)').argParser(port),
    )
    .addOption(new Option('--prefix <prefix>', 'namespace of queues and Redis keys (env TD_PREFIX, default td)'))
    .addOption(
      new Option(
        '--concurrency <n>',
        'concurrent-queue jobs at once (env TD_WORKER_CONCURRENCY, default 16)',
      ).argParser(positive),
    )
    .addHelpText('after', ENVIRONMENT)
    .action(worker);

  program
    .command('dev')
    .description('Coordinator and workers in one process: embedded unless REDIS_URL is set.')
    .addOption(new Option('--port <n>', 'HTTP port (env PORT, default 8080)').argParser(port))
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .addOption(new Option('--prefix <prefix>', 'namespace of queues and Redis keys (env TD_PREFIX, default td)'))
    .addOption(new Option('--workers <n>', 'in-process workers with REDIS_URL (default 2)').argParser(positive))
    .addHelpText('after', ENVIRONMENT)
    .action((opts) => serve(opts, true));

  addMcpCommand(program);
  program
    .command('demo')
    .description('A scripted coding-agent session against `dev` (embedded), printed as readable tables.')
    .addOption(new Option('--keep', 'keep the demo workspace directory'))
    .action((opts: { keep?: boolean }) => runDemo({ keep: opts.keep === true, log }));

  return program;
}

buildCli()
  .parseAsync(process.argv)
  .catch((e: unknown) => {
    process.stderr.write(`tool-dispatch: ${e instanceof Error ? e.message : String(e)}\n`);
    // A configuration the process cannot start with is a usage error: exit 2 (API.md TD_MCP_CONFIG).
    process.exit(e instanceof ConfigError ? 2 : 1);
  });
