import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Per run: what the target saw of it in flight. */
interface RunCount {
  concurrent: number;
  serial: number;
  maxConcurrent: number;
}

/**
 * A loopback HTTP server that counts, per run, the calls in flight that hit it, and records every
 * breach of the per-run rules (DESIGN.md pass 2): more than `limit` concurrent calls at once, a
 * serial call arriving while anything else of its run is in flight, or anything arriving while a
 * serial call of its run is. `GET /hold/<run>/<c|s>/<n>?ms=<ms>` waits `ms`, then answers 200.
 */
export interface LimitTarget {
  port: number;
  url(run: string, kind: 'c' | 's', n: string, ms: number): string;
  /** Every breach, as text (empty while the rules hold). */
  readonly breaches: string[];
  /** The most concurrent calls of any one run seen in flight at once. */
  maxConcurrent(): number;
  hits: { concurrent: number; serial: number };
  close(): Promise<void>;
}

export async function startLimitTarget(limit = 5): Promise<LimitTarget> {
  const runs = new Map<string, RunCount>();
  const breaches: string[] = [];
  const hits = { concurrent: 0, serial: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer(function holdRequest(req, res) {
    const [, verb, run = '', kind, n] = (req.url ?? '').split('?')[0]?.split('/') ?? [];
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0);
    if (verb !== 'hold' || (kind !== 'c' && kind !== 's')) {
      res.writeHead(404).end();
      return;
    }
    const c = runs.get(run) ?? { concurrent: 0, serial: 0, maxConcurrent: 0 };
    runs.set(run, c);
    if (c.serial > 0) breaches.push(`${run}: ${kind}/${n} arrived while a serial call of the run was in flight`);
    if (kind === 's') {
      if (c.concurrent > 0)
        breaches.push(`${run}: serial ${n} arrived with ${c.concurrent} concurrent calls in flight`);
      c.serial++;
      hits.serial++;
    } else {
      c.concurrent++;
      hits.concurrent++;
      c.maxConcurrent = Math.max(c.maxConcurrent, c.concurrent);
      if (c.concurrent > limit) breaches.push(`${run}: ${c.concurrent} concurrent calls in flight (limit ${limit})`);
    }
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      if (kind === 's') c.serial--;
      else c.concurrent--;
    };
    // A call's end is when the target answers it (or the caller gives up on it).
    res.once('close', finish);
    setTimeout(() => {
      finish();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ run, kind, n }));
    }, ms);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (run, kind, n, ms) => `http://127.0.0.1:${port}/hold/${run}/${kind}/${n}?ms=${ms}`,
    breaches,
    maxConcurrent: () => Math.max(0, ...[...runs.values()].map((c) => c.maxConcurrent)),
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
