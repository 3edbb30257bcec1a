// A distributed stack for the observability tests: real Redis, one coordinator process, worker
// processes, a local page for fetch_page (so the result cache has something to cache), and a
// cleanup that leaves a shared Redis as it found it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueueExecutor } from '@tool-dispatch/coordinator';
import { randomPrefix, type TestRedis } from '../support/redis.js';
import {
  type Coordinator,
  makeWorkspaceRoot,
  request,
  type StackEnv,
  startCoordinatorProcess,
  startWorkerProcess,
  type Worker,
  waitForOk,
} from './processes.js';

export interface Stack {
  coordinator: Coordinator;
  workers: Worker[];
  /** A page on 127.0.0.1 that fetch_page may reach (TD_HTTP_ALLOW names it). */
  pageUrl: string;
  prefix: string;
  /** SIGTERM to every process (workers last, so in-flight jobs finish); resolves with their exit codes. */
  stopProcesses(): Promise<(number | null)[]>;
  /** Stops the processes and the page, and deletes this stack's keys and queues. */
  close(): Promise<void>;
}

export interface StackOptions {
  /** Env of both roles (OTEL_*, TD_API_TOKEN, ...). */
  env?: Record<string, string>;
  coordinatorEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
  workers?: number;
}

async function startPage(): Promise<{ url: string; server: Server }> {
  const server = createServer(function page(_req, res) {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('tool-dispatch observability page\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/page.txt`, server };
}

/** BullMQ's queue keys have no TTL (the rest of a prefix's keys do): remove them, in case REDIS_URL is shared. */
async function obliterateQueues(redisUrl: string, prefix: string): Promise<void> {
  const executor = new QueueExecutor({ redisUrl, prefix });
  try {
    await executor.waitUntilReady();
    await Promise.all(executor.allQueues().map((q) => q.obliterate({ force: true }).catch(() => undefined)));
  } finally {
    await executor.close().catch(() => undefined);
  }
}

/** A coordinator and `workers` worker processes on `redis`, ready (/readyz 200) when it resolves. */
export async function startStack(redis: TestRedis, options: StackOptions = {}): Promise<Stack> {
  const prefix = randomPrefix('td-obs');
  const workspace = await makeWorkspaceRoot();
  const page = await startPage();
  const pageHost = new URL(page.url).host;
  const env: StackEnv = {
    redisUrl: redis.url,
    prefix,
    workspaceRoot: workspace.dir,
    extra: { TD_HTTP_ALLOW: pageHost, ...options.env },
  };
  const workers: Worker[] = [];
  let coordinator: Coordinator | undefined;
  const stopProcesses = async () => {
    const codes = [await coordinator?.stop()].filter((c) => c !== undefined);
    codes.push(...(await Promise.all(workers.map((w) => w.stop()))));
    return codes;
  };
  const close = async () => {
    await stopProcesses();
    await new Promise<void>((resolve) => {
      page.server.closeAllConnections();
      page.server.close(() => resolve());
    });
    await workspace.remove();
    if (redis.source === 'REDIS_URL') await obliterateQueues(redis.url, prefix);
  };
  try {
    // Started side by side; /readyz answers 200 once the coordinator sees a worker's heartbeat.
    const starting = [
      ...Array.from({ length: options.workers ?? 1 }, () =>
        startWorkerProcess(env, options.workerEnv).then((w) => void workers.push(w)),
      ),
      startCoordinatorProcess(env, options.coordinatorEnv).then((c) => {
        coordinator = c;
      }),
    ];
    const failed = (await Promise.allSettled(starting)).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    if (!coordinator) throw new Error('no coordinator');
    await waitForOk(`${coordinator.url}/readyz`);
  } catch (e) {
    await close();
    throw e;
  }
  return { coordinator, workers, pageUrl: page.url, prefix, stopProcesses, close };
}

/** PUTs a session with the openai provider (find_tools and run_tool loaded, every other tool deferred). */
export async function putSession(stack: Stack, session: string, headers: Record<string, string> = {}): Promise<void> {
  const r = await request(`${stack.coordinator.url}/v1/sessions/${session}`, {
    method: 'PUT',
    body: { provider: 'openai' },
    headers,
  });
  if (r.status !== 200) throw new Error(`PUT session ${session}: ${r.status} ${r.text}`);
}

export interface Call {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export const runTool = (id: string, name: string, args: Record<string, unknown>): Call => ({
  id,
  name: 'run_tool',
  args: { name, args },
});

/** POSTs a round and returns its answer, failing on anything but 200. */
export async function submitRound(
  stack: Stack,
  path: { session: string; run: string },
  calls: Call[],
  headers: Record<string, string> = {},
): Promise<{ round: string; results: { id: string; name: string; status: string; [key: string]: unknown }[] }> {
  const r = await request(`${stack.coordinator.url}/v1/sessions/${path.session}/runs/${path.run}/rounds`, {
    body: { calls },
    headers,
  });
  if (r.status !== 200) throw new Error(`round: ${r.status} ${r.text}`);
  return r.json;
}
