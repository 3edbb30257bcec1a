import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TdClient } from '@tool-dispatch/client';
import { type DispatchConfigOptions, resolveConfig } from '@tool-dispatch/shared';
import type { FastifyInstance } from 'fastify';
import type { Dispatcher } from '../../packages/coordinator/src/dispatcher.js';
import { Engine } from '../../packages/coordinator/src/engine.js';
import { type BuildServerOptions, buildServer } from '../../packages/coordinator/src/http/server.js';
import { FakeExecutor, sleep } from '../../packages/coordinator/src/testing/fake-executor.js';

export interface Harness {
  base: string;
  app: FastifyInstance;
  engine: Dispatcher;
  client: TdClient;
  workspaceRoot: string;
  api(method: string, p: string, body?: unknown, headers?: Record<string, string>): Promise<ApiAnswer>;
  close(): Promise<void>;
}

export interface ApiAnswer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test helper reads arbitrary JSON answers
  json: any;
  headers: Headers;
}

export interface HarnessOptions {
  config?: DispatchConfigOptions;
  server?: Omit<BuildServerOptions, 'dispatcher'>;
  /** Wraps the engine (e.g. to override ready()). */
  wrap?: (engine: Dispatcher) => Dispatcher;
}

function devExecutor(): FakeExecutor {
  const ex = new FakeExecutor();
  ex.on('calculate', async (a) => {
    const expr = String(a.expression);
    const value = expr.includes('*')
      ? expr.split('*').reduce((s, x) => s * Number(x), 1)
      : expr.split('+').reduce((s, x) => s + Number(x), 0);
    return { value };
  });
  ex.on('run_command', async (a, _job, signal) => {
    const m = /sleep (\d+(?:\.\d+)?)/.exec(String(a.command));
    if (m) {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, Number(m[1]) * 1000);
        signal.addEventListener('abort', () => {
          clearTimeout(t);
          reject(new Error('aborted'));
        });
      });
    }
    return { exitCode: 0, stdout: '', stderr: '' };
  });
  ex.on('read_files', async (a) => ({ files: (a.paths as string[]).map((p) => ({ path: p, content: '' })) }));
  ex.on('find_tools', async () => ({ tools: [] }));
  void sleep;
  return ex;
}

/** A real server on a free port over a fresh workspace root. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const workspaceRoot = await mkdtemp(path.join(tmpdir(), 'td-http-'));
  // An empty environment: the test decides every setting.
  const config = resolveConfig({ workspaceRoot, ...options.config }, {});
  const engine = new Engine({ config, executor: devExecutor() });
  const dispatcher = options.wrap ? options.wrap(engine) : engine;
  const app = await buildServer({ dispatcher, ...options.server });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no port');
  const base = `http://127.0.0.1:${address.port}`;
  const token = options.server?.apiToken;
  const client = new TdClient({ baseUrl: base, ...(token ? { token } : {}) });
  return {
    base,
    app,
    engine,
    client,
    workspaceRoot,
    async api(method, p, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        const h = init.headers as Record<string, string>;
        if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
      }
      const res = await fetch(base + p, init);
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, text, json, headers: res.headers };
    },
    async close() {
      await app.close();
      await engine.drain();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

let seq = 0;
/** A fresh id with a readable prefix. */
export const uid = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
