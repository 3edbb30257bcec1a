// The HTTP bench's peer: a hand-written dispatcher over plain BullMQ, in its own process, with the
// project's shapes for `PUT /v1/sessions/{s}` and `POST /v1/sessions/{s}/runs/{r}/rounds`
// (`{calls: [{id, name, args}]}` → `{round, results: [{id, name, status, output | error, durationMs}]}`).
// No rules: no validation, dedupe, per-run limit, history or events; each call is one job
// (`queue.addBulk`), awaited with `job.waitUntilFinished(queueEvents)`.
// Args: <redis url> <key prefix> <port>. Prints `listening on <port>` when it accepts requests.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { LISTEN_BACKLOG } from '../packages/coordinator/src/http/limits.js';

const [redisUrl = 'redis://127.0.0.1:6379', prefix = 'bench-peer', port = '0'] = process.argv.slice(2);
const PEER_QUEUE = 'calls';
/** The project's retention of finished jobs (FINISHED_JOB_RETENTION_S), so BullMQ does the same housekeeping. */
const PEER_JOB_OPTIONS = { removeOnComplete: { age: 60 * 60 }, removeOnFail: { age: 24 * 60 * 60 } };
/** A call not finished within this ends `error`/`timeout`, as a project call past its deadline would. */
const CALL_TIMEOUT_MS = 60_000;

const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
const queue = new Queue(PEER_QUEUE, { connection, prefix });
const events = new QueueEvents(PEER_QUEUE, { connection: { url: redisUrl }, prefix });
// waitUntilFinished adds a listener per waiting job: thousands at once at 5000 sessions.
queue.setMaxListeners(0);
events.setMaxListeners(0);
await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
const sessions = new Map<string, { provider: string }>();

interface NativeCall {
  id: string;
  name: string;
  args: unknown;
}

async function runCall(job: Job, call: NativeCall) {
  const t0 = performance.now();
  try {
    const output = await job.waitUntilFinished(events, CALL_TIMEOUT_MS);
    return { id: call.id, name: call.name, status: 'ok', output, durationMs: Math.round(performance.now() - t0) };
  } catch (e) {
    const message = (e as Error).message;
    const code = /timed out|timeout/i.test(message) ? 'timeout' : 'handler_error';
    return { id: call.id, name: call.name, status: 'error', error: { code, message }, durationMs: 0 };
  }
}

async function round(calls: NativeCall[]) {
  const jobs = await queue.addBulk(
    calls.map((c) => ({ name: c.name, data: { name: c.name, args: c.args }, opts: PEER_JOB_OPTIONS })),
  );
  return { round: randomUUID(), results: await Promise.all(jobs.map((j, i) => runCall(j, calls[i] as NativeCall))) };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const ROUTE = /^\/v1\/sessions\/([^/]+)(?:\/runs\/([^/]+)\/rounds)?$/;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const m = ROUTE.exec(req.url ?? '');
  const session = m?.[1];
  if (!m || !session) return send(res, 404, { error: { code: 'not_found', message: 'no such route' } });
  const body = (await readJson(req)) as { provider?: string; calls?: NativeCall[] };
  if (req.method === 'PUT' && !m[2]) {
    sessions.set(session, { provider: body.provider ?? 'openai' });
    return send(res, 200, { id: session, provider: body.provider ?? 'openai' });
  }
  if (req.method === 'POST' && m[2]) {
    if (!sessions.has(session)) return send(res, 404, { error: { code: 'not_found', message: 'unknown session' } });
    if (!Array.isArray(body.calls)) return send(res, 400, { error: { code: 'bad_request', message: 'no calls' } });
    return send(res, 200, await round(body.calls));
  }
  send(res, 404, { error: { code: 'not_found', message: 'no such route' } });
}

const server = createServer(function peerRequest(req, res) {
  handle(req, res).catch((e: Error) => send(res, 500, { error: { code: 'internal_error', message: e.message } }));
});
server.keepAliveTimeout = 60_000;
// The coordinator's accept backlog, so a burst of connections hits both sides alike.
server.listen({ port: Number(port), host: '127.0.0.1', backlog: LISTEN_BACKLOG }, () => {
  const address = server.address();
  process.stdout.write(`listening on ${typeof address === 'object' && address ? address.port : '?'}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  Promise.all([events.close(), queue.close()]).finally(() => {
    connection.disconnect();
    process.exit(0);
  });
});
