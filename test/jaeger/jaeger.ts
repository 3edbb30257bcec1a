// A real Jaeger v2 for the Jaeger test: `go tool jaeger` (test/jaeger/tools) with
// test/jaeger/jaeger.yaml on three free loopback ports (OTLP/HTTP in, the query API out, the
// query gRPC), its in-memory store; and the JSON its query API answers with.
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from '../support/net.js';
import { findGo, GO_MISSING, JAEGER_CONFIG, TOOLS_DIR } from './go.js';

/** `go tool jaeger` links the binary on its first use after a build: allow for it. */
const START_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 10_000;

export interface JaegerTag {
  key: string;
  type: string;
  value: unknown;
}

/** A span as `/api/traces/{id}` answers (Jaeger's UI model: times in µs, attributes as tags). */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: JaegerTag[];
  logs: { timestamp: number; fields: JaegerTag[] }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: JaegerTag[] }>;
}

export interface Jaeger {
  /** Where processes send OTLP/HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly otlpUrl: string;
  /** The query service: `/api/services`, `/api/traces`, the UI. */
  readonly queryUrl: string;
  output(): string;
  /** GET on the query API; the `data` of a 200 answer, else throws with the answer. */
  api<T>(pathAndQuery: string): Promise<T>;
  stop(): Promise<void>;
}

/** A span's tag (attribute) by key, or undefined. */
export const tag = (span: JaegerSpan, key: string): unknown => span.tags.find((t) => t.key === key)?.value;

/** The span a span is a child of (its CHILD_OF reference), or undefined for a root. */
export const parentOf = (span: JaegerSpan): string | undefined =>
  span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;

/** The env minus OTEL_* (Jaeger's own SDK reads them). */
const withoutOtel = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith('OTEL_')));

/** Starts Jaeger; resolves once its query API answers. Fails naming the cause when Go is missing. */
export async function startJaeger(): Promise<Jaeger> {
  const go = findGo();
  if (!go) throw new Error(GO_MISSING);
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  // detached: `go tool` and the Jaeger it starts share a process group the stop signals.
  const child = spawn(go, ['tool', 'jaeger', '--config', JAEGER_CONFIG], {
    cwd: TOOLS_DIR,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...withoutOtel(process.env),
      JAEGER_OTLP_HTTP_PORT: String(otlp),
      JAEGER_QUERY_HTTP_PORT: String(query),
      JAEGER_QUERY_GRPC_PORT: String(grpc),
    },
  });
  let output = '';
  const append = (d: Buffer) => {
    output += d.toString();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const queryUrl = `http://127.0.0.1:${query}`;
  const jaeger: Jaeger = {
    otlpUrl: `http://127.0.0.1:${otlp}`,
    queryUrl,
    output: () => output,
    async api<T>(pathAndQuery: string): Promise<T> {
      const res = await fetch(`${queryUrl}${pathAndQuery}`);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`GET ${pathAndQuery}: ${res.status} ${text}`);
      return (JSON.parse(text) as { data: T }).data;
    },
    stop: () => stopGroup(child, exited),
  };
  try {
    await waitUntilReady(jaeger, exited);
  } catch (e) {
    await jaeger.stop();
    throw e;
  }
  return jaeger;
}

async function waitUntilReady(jaeger: Jaeger, exited: Promise<number | null>): Promise<void> {
  let code: number | null | undefined;
  void exited.then((c) => {
    code = c;
  });
  for (const deadline = Date.now() + START_TIMEOUT_MS; ; await new Promise((r) => setTimeout(r, 250))) {
    if (code !== undefined)
      throw new Error(`go tool jaeger exited with ${code} before it answered:\n${jaeger.output()}`);
    const ready = /Everything is ready/.test(jaeger.output());
    if (
      ready &&
      (await jaeger.api('/api/services').then(
        () => true,
        () => false,
      ))
    )
      return;
    if (Date.now() > deadline) {
      throw new Error(`Jaeger did not answer on ${jaeger.queryUrl} within ${START_TIMEOUT_MS} ms:\n${jaeger.output()}`);
    }
  }
}

async function stopGroup(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), s);
    } catch {
      // already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
