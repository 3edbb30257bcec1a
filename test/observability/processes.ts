// Real `bin/tool-dispatch` processes for the observability tests: a coordinator and workers in
// distributed mode, each in its own process group, stopped with SIGTERM (so they flush their
// spans) and SIGKILLed if they outlive the grace period.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Answer, readReply } from '../support/http.js';
import { freePort } from '../support/net.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin/tool-dispatch');
const CLI = path.join(ROOT, 'packages/coordinator/dist/cli.js');
const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 15_000;

export interface TdProcess {
  readonly role: 'coordinator' | 'worker' | 'dev';
  readonly child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** SIGTERM to its process group; SIGKILL after the grace period. Resolves with the exit code. */
  stop(): Promise<number | null>;
}

export interface Coordinator extends TdProcess {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
}

export interface Worker extends TdProcess {
  /** Its /metrics and /healthz port. */
  readonly metricsUrl: string;
}

/** Env shared by every process of one stack; the role-specific parts are added per process. */
export interface StackEnv {
  redisUrl: string;
  prefix: string;
  workspaceRoot: string;
  /** OTEL_*, TD_API_TOKEN, TD_HTTP_ALLOW, ... */
  extra?: Record<string, string>;
}

export async function makeWorkspaceRoot(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-observe-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

function requireBuild(): void {
  if (!existsSync(CLI)) {
    throw new Error(
      `${CLI} is missing: these tests run the built CLI (bin/tool-dispatch). Run \`npx -y pnpm@12.4.2 build\` first.`,
    );
  }
}

/** The env a child sees: the parent's minus anything that would change its mode or export, plus ours. */
function childEnv(stack: StackEnv, own: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('OTEL_') || key.startsWith('TD_') || key === 'REDIS_URL' || key === 'PORT') continue;
    env[key] = value;
  }
  return {
    ...env,
    ...(stack.redisUrl ? { REDIS_URL: stack.redisUrl } : {}),
    TD_PREFIX: stack.prefix,
    TD_WORKSPACE_ROOT: stack.workspaceRoot,
    ...stack.extra,
    ...own,
  };
}

function launch(role: TdProcess['role'], args: string[], env: NodeJS.ProcessEnv) {
  requireBuild();
  // detached: a process group of its own, so a stop reaches whatever it started (commands).
  const child = spawn(BIN, [role, ...args], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const append = (d: Buffer) => {
    output += d.toString();
    for (const wake of [...waiters]) wake();
  };
  const waiters = new Set<() => void>();
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stopping: Promise<number | null> | undefined;
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const proc: TdProcess = {
    role,
    child,
    output: () => output,
    exited,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
        signalGroup('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const killed = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            signalGroup('SIGKILL');
            resolve();
          }, STOP_GRACE_MS);
        });
        await Promise.race([exited, killed]);
        clearTimeout(timer);
        return exited;
      })();
      return stopping;
    },
  };

  /** Resolves with the first match of `pattern` in the output; rejects if the process exits first. */
  function waitForLine(pattern: RegExp): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(output);
        if (!match) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(match);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${role} did not print ${pattern} within ${START_TIMEOUT_MS} ms:\n${output}`));
      }, START_TIMEOUT_MS);
      waiters.add(check);
      void exited.then((code) => {
        if (!waiters.has(check)) return;
        waiters.delete(check);
        clearTimeout(timer);
        reject(new Error(`${role} exited with ${code} before printing ${pattern}:\n${output}`));
      });
      check();
    });
  }
  return { proc, waitForLine };
}

/** `tool-dispatch coordinator` on a free port of 127.0.0.1; resolves once it listens. */
export function startCoordinatorProcess(stack: StackEnv, own: Record<string, string> = {}): Promise<Coordinator> {
  return startListening('coordinator', stack, own);
}

/** `tool-dispatch dev` on a free port of 127.0.0.1 (embedded when the stack's redisUrl is ''); resolves once it listens. */
export function startDevProcess(stack: StackEnv, own: Record<string, string> = {}): Promise<Coordinator> {
  return startListening('dev', stack, own);
}

async function startListening(role: 'coordinator' | 'dev', stack: StackEnv, own: Record<string, string>) {
  const { proc, waitForLine } = launch(role, ['--port', '0', '--host', '127.0.0.1'], childEnv(stack, own));
  try {
    const match = await waitForLine(/listening on (http:\/\/\S+)/);
    return { ...proc, url: match[1] as string };
  } catch (e) {
    await proc.stop();
    throw e;
  }
}

/** `tool-dispatch worker` with its metrics on a free port; resolves once it consumes the queues. */
export async function startWorkerProcess(stack: StackEnv, own: Record<string, string> = {}): Promise<Worker> {
  const port = await freePort();
  const { proc, waitForLine } = launch('worker', ['--port', String(port)], childEnv(stack, own));
  try {
    await waitForLine(/worker \S+ consuming/);
    return { ...proc, metricsUrl: `http://127.0.0.1:${port}` };
  } catch (e) {
    await proc.stop();
    throw e;
  }
}

/** Polls `GET url` until it answers 200 (e.g. /readyz once a worker's heartbeat is seen). */
export async function waitForOk(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      last = `${res.status} ${await res.text()}`;
      if (res.ok) return;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
}

export type JsonAnswer = Answer;

/** One HTTP request with a JSON body (when given); the answer parsed when it is JSON. */
export async function request(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<JsonAnswer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  return readReply(
    await fetch(url, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    }),
  );
}
