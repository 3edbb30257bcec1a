// The HTTP bench's load generator: `sessions` agent sessions, each one run doing rounds of
// `roundSize` `calculate` calls back to back over keep-alive HTTP (one socket per session, so no
// round waits for a socket), for a fixed time. Counts every result that is not `ok`, whatever
// ended it: a non-ok status, an HTTP error, a client timeout, a lost connection.

import { Agent, request } from 'node:http';
import type { Stack } from './http-stacks.js';

export interface Reply {
  status: number;
  body: unknown;
}

/** A keep-alive HTTP client with room for one socket per session. */
export class LoadClient {
  private agent: Agent;

  constructor(private readonly sockets: number) {
    this.agent = this.newAgent();
  }

  private newAgent(): Agent {
    return new Agent({ keepAlive: true, maxSockets: this.sockets, maxFreeSockets: this.sockets, scheduling: 'lifo' });
  }

  /**
   * Drops the idle keep-alive sockets. Between slices a side's sockets sit idle for the other side's
   * whole slice, longer than a server's keep-alive timeout at 5000 sessions, and reusing a socket
   * the server is closing ends the request ECONNRESET: a bench artifact, not the server's answer.
   */
  reset(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  /**
   * Opens `count` keep-alive sockets to the server, each with one `GET /healthz` (a 404 on the
   * peer: any answer will do), before a slice starts. Without it a slice's first rounds would
   * measure connection setup under load rather than rounds: libuv 1.45+ (Node 20) accepts one
   * connection per event-loop turn (libuv#3696), so with the loop busy, the last of 1000 new
   * connections waited up to 4.8 s to be accepted, on both sides (bench/README.md).
   */
  async open(port: number, count: number, timeoutMs: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.send(port, 'GET', '/healthz', undefined, timeoutMs)));
  }

  /** One request, with a JSON body unless `body` is undefined; rejects on a lost connection or after `timeoutMs`. */
  send(port: number, method: string, path: string, body: unknown, timeoutMs: number): Promise<Reply> {
    const payload = body === undefined ? '' : JSON.stringify(body);
    const headers =
      body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent: this.agent,
          headers,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              /* kept as text */
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => req.destroy(new ClientTimeout(timeoutMs)), timeoutMs);
      req.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export class ClientTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** Creates sessions `s<have>` … `s<want-1>` on the stack (claude-code, calculate's schema fetched), a few at a time. */
export async function ensureSessions(client: LoadClient, stack: Stack, want: number): Promise<void> {
  const PARALLEL = 200;
  let next = stack.sessions;
  const one = async () => {
    while (next < want) {
      const i = next++;
      const r = await client.send(stack.port, 'PUT', `/v1/sessions/s${i}`, { provider: 'claude-code' }, 30_000);
      if (r.status !== 200) throw new Error(`${stack.side}: PUT s${i} answered ${r.status} ${JSON.stringify(r.body)}`);
      // Under claude-code a deferred tool's first call answers its schema: fetched here, outside the figures.
      const first = await client.send(
        stack.port,
        'POST',
        `/v1/sessions/s${i}/runs/setup/rounds`,
        { calls: callsOf(1) },
        30_000,
      );
      const status = (first.body as { results?: { status: string }[] }).results?.[0]?.status;
      if (status !== 'schema' && status !== 'ok')
        throw new Error(`${stack.side}: s${i}'s first calculate: ${JSON.stringify(first.body)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, want) }, one));
  stack.sessions = Math.max(stack.sessions, want);
}

export interface SliceLoad {
  sessions: number;
  roundSize: number;
  /** Rounds start until this many ms have passed; the slice ends when the last one is answered. */
  ms: number;
  /** The run every session's rounds belong to. */
  run: string;
  timeoutMs: number;
  /** Called once, half-way through the slice (a memory sample under load). */
  midway?: () => void;
}

export interface SliceResult {
  elapsedMs: number;
  rounds: number;
  calls: number;
  /** Results by status, `ok` included; failed requests count one per call under `http_<code>`, `client_timeout` or `connection_error:<errno code>`. */
  statuses: Record<string, number>;
  /** Time of every round (answered or not), in ms. */
  latenciesMs: number[];
  /** CPU this process (the load generator) used, in ms. */
  loadGenCpuMs: number;
}

let expressionCounter = 0;

/** Unique expressions, so no call is ever a dedupe or cache hit. */
function callsOf(roundSize: number) {
  const n = expressionCounter++;
  return Array.from({ length: roundSize }, (_, c) => ({
    id: `c${c}`,
    name: 'calculate',
    args: { expression: `${n} * 7 + ${c}` },
  }));
}

export async function runSlice(client: LoadClient, stack: Stack, load: SliceLoad): Promise<SliceResult> {
  const statuses: Record<string, number> = {};
  const count = (status: string, n = 1) => {
    statuses[status] = (statuses[status] ?? 0) + n;
  };
  const latenciesMs: number[] = [];
  let rounds = 0;
  client.reset();
  await client.open(stack.port, load.sessions, load.timeoutMs);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + load.ms;
  const midway = load.midway ? setTimeout(load.midway, load.ms / 2) : undefined;
  const session = async (i: number) => {
    const path = `/v1/sessions/s${i}/runs/${load.run}/rounds`;
    while (performance.now() < until) {
      const r0 = performance.now();
      try {
        const reply = await client.send(stack.port, 'POST', path, { calls: callsOf(load.roundSize) }, load.timeoutMs);
        const results = (reply.body as { results?: { status: string }[] } | undefined)?.results;
        if (reply.status === 200 && Array.isArray(results)) {
          for (const x of results) count(x.status);
          if (results.length < load.roundSize) count('missing', load.roundSize - results.length);
        } else {
          // The error's code too (503 overloaded or unavailable), so a run says which limit answered.
          const code = (reply.body as { error?: { code?: string } } | undefined)?.error?.code;
          count(`http_${reply.status}${code ? `:${code}` : ''}`, load.roundSize);
        }
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        count(
          e instanceof ClientTimeout ? 'client_timeout' : `connection_error${code ? `:${code}` : ''}`,
          load.roundSize,
        );
        // A refused connection fails at once: a short pause keeps the loop from spinning.
        if (!(e instanceof ClientTimeout)) await new Promise((r) => setTimeout(r, 20));
      }
      latenciesMs.push(performance.now() - r0);
      rounds++;
    }
  };
  await Promise.all(Array.from({ length: load.sessions }, (_, i) => session(i)));
  clearTimeout(midway);
  const cpu = process.cpuUsage(cpu0);
  return {
    elapsedMs: performance.now() - t0,
    rounds,
    calls: rounds * load.roundSize,
    statuses,
    latenciesMs,
    loadGenCpuMs: (cpu.user + cpu.system) / 1000,
  };
}

/** The value below which `q` of the sorted values lie (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
