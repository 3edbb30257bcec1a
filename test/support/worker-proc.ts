// A worker in its own OS process, for fault tests: `node --conditions=td-source --import tsx test/support/worker-proc.ts`.
// Env: REDIS_URL, TD_PREFIX, WORKER_ID, and optionally LOCK_MS, STALLED_MS, CONCURRENCY, EXT_SLEEP_TOOLS=1
// (the sleep handler also as ext_sleep_read and ext_sleep_write).
// Prints `ready <id>` once it consumes; SIGTERM closes it gracefully.
import { startWorker } from '../../packages/worker/src/app/start-worker.js';
import { registerExtSleepTools, testRegistry } from './test-handlers.js';

const env = process.env;
const optionalNumber = (v: string | undefined) => (v ? { value: Number(v) } : undefined);
const lock = optionalNumber(env.LOCK_MS);
const stalled = optionalNumber(env.STALLED_MS);

const worker = await startWorker({
  redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  prefix: env.TD_PREFIX ?? 'td',
  registry: env.EXT_SLEEP_TOOLS === '1' ? registerExtSleepTools(testRegistry()) : testRegistry(),
  config: { httpAllow: [], searchUrl: undefined },
  concurrency: Number(env.CONCURRENCY ?? 4),
  ...(env.WORKER_ID ? { id: env.WORKER_ID } : {}),
  ...(lock ? { lockDurationMs: lock.value } : {}),
  ...(stalled ? { stalledIntervalMs: stalled.value } : {}),
  onError: (e) => process.stderr.write(`worker error: ${e.message}\n`),
});
process.stdout.write(`ready ${worker.id}\n`);
process.once('SIGTERM', () => {
  worker.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
