import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CliProcesses, type Proc } from '../support/cli-procs.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

// One real deployment for the sandbox corpus: `dev` (embedded), or a coordinator and a `worker`
// on a real Redis (distributed), with two tenants' tokens, an MCP config and planted secrets.

export type DeploymentMode = 'embedded' | 'distributed';

export interface Planted {
  dir: string;
  root: string;
  tokensFile: string;
  mcpFile: string;
  secretFile: string;
  secretText: string;
  marker: string;
  tokens: { a: string; b: string };
}

export interface Deployment {
  mode: DeploymentMode;
  planted: Planted;
  port: number;
  /** The process that runs the commands (dev, or the worker). */
  runner: Proc;
  metricsUrl: string;
  redisUrl: string | undefined;
  stop(): Promise<void>;
}

const hex = (s: string) => createHash('sha256').update(s).digest('hex');
export const rand = () => randomBytes(6).toString('hex');

/** Secrets planted before the service starts; the workspace root is under them. */
export function plant(): Planted {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'td-sbx-corpus-')));
  const conf = path.join(dir, 'conf');
  mkdirSync(conf);
  const tokens = { a: `tok-a-${rand()}`, b: `tok-b-${rand()}` };
  const tokensFile = path.join(conf, 'tokens.json');
  writeFileSync(
    tokensFile,
    JSON.stringify({
      tokens: [
        { name: 'a', sha256: hex(tokens.a), tenant: 'ta', role: 'backend' },
        { name: 'b', sha256: hex(tokens.b), tenant: 'tb', role: 'backend' },
      ],
    }),
  );
  const mcpFile = path.join(conf, 'mcp.json');
  writeFileSync(mcpFile, JSON.stringify({ mcpServers: {} }));
  const secretText = `SECRET-CONF-${rand()}`;
  const secretFile = path.join(conf, 'secret.txt');
  writeFileSync(secretFile, `${secretText}\n`);
  return {
    dir,
    root: path.join(dir, 'ws'),
    tokensFile,
    mcpFile,
    secretFile,
    secretText,
    marker: `sbxmark${rand()}`,
    tokens,
  };
}

/** Starts a deployment of `mode` over `planted` with `env` (TD_SANDBOX=off, limits…). */
export async function startDeployment(
  mode: DeploymentMode,
  planted: Planted,
  env: Record<string, string>,
  shared: { redis?: TestRedis } = {},
): Promise<Deployment> {
  const procs = new CliProcesses();
  const base = {
    TD_API_TOKENS: planted.tokensFile,
    TD_MCP_CONFIG: planted.mcpFile,
    TD_WORKSPACE_ROOT: planted.root,
    TD_SBX_MARKER: planted.marker,
    REDIS_URL: '',
    ...env,
  };
  if (mode === 'embedded') {
    const dev = await procs.start(['dev', '--host', '127.0.0.1'], base, /listening on/);
    return {
      mode,
      planted,
      port: dev.port,
      runner: dev,
      metricsUrl: `http://127.0.0.1:${dev.port}/metrics`,
      redisUrl: undefined,
      stop: async () => stopAll(procs),
    };
  }
  const redis = shared.redis ?? (await startRedis());
  const withRedis = { ...base, REDIS_URL: redis.url, TD_PREFIX: randomPrefix('sbx') };
  const worker = await procs.start(['worker'], withRedis, /consuming/);
  const coordinator = await procs.start(['coordinator', '--host', '127.0.0.1'], withRedis, /listening on/);
  return {
    mode,
    planted,
    port: coordinator.port,
    runner: worker,
    metricsUrl: `http://127.0.0.1:${worker.port}/metrics`,
    redisUrl: redis.url,
    stop: async () => {
      await stopAll(procs);
      if (!shared.redis) await redis.stop();
    },
  };
}

async function stopAll(procs: CliProcesses): Promise<void> {
  procs.killAll('SIGTERM');
  await Promise.all(
    procs.procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
          const t = setTimeout(() => {
            try {
              if (p.child.pid) process.kill(-p.child.pid, 'SIGKILL');
            } catch {}
            resolve();
          }, 5000);
          p.child.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
        }),
    ),
  );
}

export function removePlanted(planted: Planted): void {
  rmSync(planted.dir, { recursive: true, force: true });
}

/** A session of tenant `a` or `b` with run_command auto-approved and its schemas loaded. */
export async function session(d: Deployment, who: 'a' | 'b'): Promise<Session> {
  const id = `s${rand()}`;
  const tenant = who === 'a' ? 'ta' : 'tb';
  const token = d.planted.tokens[who];
  const s = new Session(d, id, tenant, token);
  const put = await s.api('PUT', `/v1/sessions/${id}`, {
    provider: 'openai',
    tenant,
    autoApprove: ['run_command', 'edit_file'],
  });
  if (put.status !== 200) throw new Error(`PUT session: ${put.status} ${JSON.stringify(put.json)}`);
  const loaded = await s.round([
    { id: 'ft', name: 'find_tools', args: { names: ['run_command', 'read_files', 'calculate'] } },
  ]);
  if (loaded[0]?.status !== 'ok') throw new Error(`find_tools: ${JSON.stringify(loaded[0])}`);
  mkdirSync(s.workspace, { recursive: true });
  return s;
}

// biome-ignore lint/suspicious/noExplicitAny: results are checked by the tests
export type Result = any;

export class Session {
  readonly workspace: string;
  private n = 0;
  constructor(
    readonly d: Deployment,
    readonly id: string,
    readonly tenant: string,
    private readonly token: string,
  ) {
    this.workspace = path.join(d.planted.root, tenant, id);
  }

  async api(method: string, p: string, body?: unknown, signal?: AbortSignal) {
    const res = await fetch(`http://127.0.0.1:${this.d.port}${p}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
    // biome-ignore lint/suspicious/noExplicitAny: checked by the caller
    return { status: res.status, json: (await res.json().catch(() => null)) as any };
  }

  async round(calls: unknown[], run = `r${rand()}`): Promise<Result[]> {
    const r = await this.api('POST', `/v1/sessions/${this.id}/runs/${run}/rounds`, { calls });
    if (r.status !== 200) throw new Error(`round: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json.results;
  }

  /** One run_command call; its result (status, output or error). */
  async sh(command: string, timeoutMs?: number, run?: string): Promise<Result> {
    const args = timeoutMs ? { command, timeoutMs } : { command };
    const [r] = await this.round([{ id: `c${++this.n}`, name: 'run_tool', args: { name: 'run_command', args } }], run);
    return r;
  }

  /** stdout+stderr of a run_command that must end ok. */
  async out(command: string): Promise<string> {
    const r = await this.sh(command);
    if (r.status !== 'ok') throw new Error(`run_command ${command} ended ${r.status}: ${JSON.stringify(r.error)}`);
    return `${r.output.stdout}${r.output.stderr}`;
  }
}

/** Whether the runner process (dev or the worker) is still alive. */
export function runnerAlive(d: Deployment): boolean {
  return d.runner.child.exitCode === null && d.runner.child.signalCode === null;
}

export async function metricsOf(d: Deployment): Promise<string> {
  return until(async () => (await fetch(d.metricsUrl)).text(), { timeoutMs: 10_000, what: 'metrics' });
}
