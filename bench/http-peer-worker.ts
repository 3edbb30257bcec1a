// A worker of the HTTP bench's peer (bench/http-peer.ts), in its own process: a plain BullMQ Worker
// on the peer's queue with the project's `calculate` handler, so both sides run the same tool code.
// Args: <redis url> <key prefix> <concurrency>. Prints `consuming` once it is ready.

import { calculate } from '@tool-dispatch/worker';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const [redisUrl = 'redis://127.0.0.1:6379', prefix = 'bench-peer', concurrency = '16'] = process.argv.slice(2);
const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
const ctx = {
  signal: new AbortController().signal,
  workspace: '/nonexistent',
  session: 'peer',
  tenant: 'default',
  run: 'peer',
  round: 'peer',
  toolCallId: 'peer',
  callId: 'peer',
  idempotencyKey: 'peer',
  timeoutMs: 60_000,
  config: { httpAllow: [], searchUrl: undefined },
};

const worker = new Worker(
  'calls',
  async function peerCall(job: Job) {
    const { name, args } = job.data as { name: string; args: Record<string, unknown> };
    if (name !== 'calculate') throw new Error(`the peer has no tool ${name}`);
    return calculate(args, ctx);
  },
  { connection, prefix, concurrency: Number(concurrency) },
);
await worker.waitUntilReady();
process.stdout.write('consuming\n');
process.once('SIGTERM', () => {
  worker.close().finally(() => {
    connection.disconnect();
    process.exit(0);
  });
});
