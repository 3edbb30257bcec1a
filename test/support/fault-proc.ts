// A coordinator or a worker in its own OS process, with the fault tools of fault-tools.ts beside the
// built-ins: `node --conditions=td-source --import tsx test/support/fault-proc.ts coordinator|worker --port <n>`.
// Configured from the environment as `tool-dispatch coordinator|worker` is (REDIS_URL, TD_PREFIX…);
// prints `listening on` (coordinator) or `consuming` (worker) once ready.
import { createDistributedEngine } from '../../packages/coordinator/src/app/distributed.js';
import { startCoordinator } from '../../packages/coordinator/src/app/serve.js';
import { resolveConfig } from '../../packages/shared/src/index.js';
import { startWorker } from '../../packages/worker/src/app/start-worker.js';
import { createBuiltinRegistry } from '../../packages/worker/src/registry.js';
import { FAULT_TOOL_DEFINITIONS, registerFaultTools } from './fault-tools.js';

const [role, ...rest] = process.argv.slice(2);
const portText = rest[rest.indexOf('--port') + 1];
const config = resolveConfig({}, process.env);
const log = (line: string) => process.stdout.write(`${line}\n`);

if (role === 'coordinator') {
  const running = await startCoordinator({
    config,
    port: Number(portText ?? 0),
    host: '127.0.0.1',
    log,
    makeEngine: async (c) => (await createDistributedEngine(c, { log, tools: FAULT_TOOL_DEFINITIONS })).engine,
  });
  process.once('SIGTERM', () => running.stop().then(() => process.exit(0)));
} else if (role === 'worker') {
  const worker = await startWorker({
    redisUrl: config.redisUrl ?? '',
    prefix: config.prefix,
    registry: registerFaultTools(createBuiltinRegistry()),
    config: { httpAllow: config.httpAllow, searchUrl: undefined },
    concurrency: config.workerConcurrency,
    serialConcurrency: config.workerSerialConcurrency,
    onError: (e) => process.stderr.write(`worker: ${e.message}\n`),
  });
  log(`worker ${worker.id} consuming`);
  process.once('SIGTERM', () => worker.close().then(() => process.exit(0)));
} else {
  process.stderr.write('usage: fault-proc.ts coordinator|worker --port <n>\n');
  process.exit(2);
}
