import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './net.js';

/** A Redis server for one test file. `kill`/`restart` exist where the harness owns the server. */
export interface TestRedis {
  url: string;
  /** Where it came from, for messages: `container`, `REDIS_URL` or `redis-server`. */
  source: 'container' | 'REDIS_URL' | 'redis-server';
  stop(): Promise<void>;
  /** Starts it again on the same port after `kill`: empty, unless it was spawned with an AOF. */
  restart?(): Promise<void>;
  /** Kills it abruptly (SIGKILL or container stop), keeping the port for `restart`. */
  kill?(): Promise<void>;
}

const DOCKER_PROBE_MS = 3_000;
const READY_TIMEOUT_MS = 10_000;

/** A random key/queue prefix, so tests sharing one Redis never see each other's keys. */
export function randomPrefix(label = 'td'): string {
  return `${label}-t${randomBytes(5).toString('hex')}`;
}

/**
 * A real Redis for a test file: a testcontainers `redis:7` when a Docker engine answers,
 * else `REDIS_URL`, else a `redis-server` spawned on a free port. Throws naming all three
 * when none is available (tests never skip silently for want of Redis).
 */
export async function startRedis(): Promise<TestRedis> {
  const reasons: string[] = [];
  const container = await tryContainer(reasons);
  if (container) return container;
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    await waitForPing(fromEnv, READY_TIMEOUT_MS);
    return { url: fromEnv, source: 'REDIS_URL', stop: async () => {} };
  }
  reasons.push('REDIS_URL is not set');
  try {
    return await spawnRedisServer();
  } catch (e) {
    reasons.push(`redis-server could not be started: ${(e as Error).message}`);
  }
  throw new Error(
    `No Redis for the tests. Tried (1) a Docker engine for testcontainers, (2) REDIS_URL, (3) a local redis-server binary:\n  - ${reasons.join('\n  - ')}\nStart Docker, set REDIS_URL=redis://host:port, or install redis-server on PATH.`,
  );
}

async function tryContainer(reasons: string[]): Promise<TestRedis | undefined> {
  if (process.env.TD_TEST_NO_DOCKER === '1') {
    reasons.push('Docker probe disabled by TD_TEST_NO_DOCKER=1');
    return undefined;
  }
  let tc: typeof import('testcontainers');
  try {
    // Loaded lazily: testcontainers' HTTP client (undici 8) does not load on every Node 20.
    tc = await import('testcontainers');
  } catch (e) {
    reasons.push(`testcontainers did not load on Node ${process.version}: ${firstLine(e)}`);
    return undefined;
  }
  try {
    await withTimeout(tc.getContainerRuntimeClient(), DOCKER_PROBE_MS, 'the Docker probe');
  } catch (e) {
    reasons.push(`no Docker engine answered for testcontainers: ${firstLine(e)}`);
    return undefined;
  }
  const hostPort = await freePort();
  // A fixed host port keeps the URL valid across kill + restart.
  const started = await new tc.GenericContainer('redis:7')
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
    .withExposedPorts({ container: 6379, host: hostPort })
    .start();
  const url = `redis://${started.getHost()}:${hostPort}`;
  await waitForPing(url, READY_TIMEOUT_MS);
  let stopped = false;
  return {
    url,
    source: 'container',
    stop: async () => {
      if (!stopped) await started.stop();
      stopped = true;
    },
    kill: async () => {
      await started.exec(['redis-cli', 'shutdown', 'nosave']).catch(() => undefined);
    },
    restart: async () => {
      await started.restart();
      await waitForPing(url, READY_TIMEOUT_MS);
    },
  };
}

/**
 * A `redis-server` of its own on a free port, whatever Docker or REDIS_URL offer: no persistence,
 * or with `appendOnly` an AOF fsynced on every write, so `kill` (SIGKILL) then `restart` brings
 * back every acknowledged write.
 */
export async function spawnRedisServer(options: { appendOnly?: boolean } = {}): Promise<TestRedis> {
  const aof = options.appendOnly === true;
  const dir = await mkdtemp(path.join(tmpdir(), 'td-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  let lastError: unknown;
  // A free port can be taken between probing and binding (parallel test files); try a few.
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    try {
      child = await launch(port, dir, aof);
    } catch (e) {
      lastError = e;
    }
  }
  if (!child) {
    await rm(dir, { recursive: true, force: true });
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }
  let current: ChildProcess | undefined = child;
  const url = `redis://127.0.0.1:${port}`;
  const kill = async () => {
    const c = current;
    current = undefined;
    if (c) await killAndWait(c, 'SIGKILL');
  };
  return {
    url,
    source: 'redis-server',
    kill,
    restart: async () => {
      await kill();
      current = await launch(port, dir, aof);
    },
    stop: async () => {
      const c = current;
      current = undefined;
      if (c) await killAndWait(c, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function launch(port: number, dir: string, aof = false): Promise<ChildProcess> {
  const persistence = aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const args = ['--save', '', ...persistence, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    if (output.length < 4096) output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    if (output.length < 4096) output += d.toString();
  });
  const exited = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output.trim().slice(-500)}`)));
  });
  exited.catch(() => undefined);
  try {
    await Promise.race([waitForPing(`redis://127.0.0.1:${port}`, READY_TIMEOUT_MS), exited]);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  child.unref();
  return child;
}

function killAndWait(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** Resolves once `PING` on the URL's host:port answers `+PONG` (raw RESP, no client library). */
export async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const { hostname, port } = new URL(url);
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    last = await pingOnce(hostname || '127.0.0.1', Number(port || 6379));
    if (last === 'PONG') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Redis at ${url} did not answer PING within ${timeoutMs} ms (${last})`);
}

function pingOnce(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let data = '';
    const done = (result: string) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(1_000, () => done('timeout'));
    socket.once('error', (e) => done(e.message));
    socket.on('data', (d) => {
      data += d.toString();
      // Password-protected servers answer -NOAUTH; that still proves it is up.
      if (data.includes('\r\n')) done(data.startsWith('+PONG') || data.startsWith('-NOAUTH') ? 'PONG' : data.trim());
    });
    socket.once('connect', () => socket.write('PING\r\n'));
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}
