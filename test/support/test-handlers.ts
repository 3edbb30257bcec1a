import { appendFileSync } from 'node:fs';
import type { Handler } from '../../packages/shared/src/index.js';
import { HandlerRegistry } from '../../packages/worker/src/registry.js';

/** Handlers for distributed tests: each can record its runs in a file, so a test can count them. */
export function testRegistry(): HandlerRegistry {
  const registry = new HandlerRegistry();
  registry.register('test_echo', async (args) => ({ echo: args, pid: process.pid }));
  registry.register('test_sleep', sleepHandler);
  registry.register('test_side_effect', sleepHandler);
  registry.register('test_fail', async () => {
    throw new Error('the test handler failed on purpose');
  });
  return registry;
}

/**
 * The sleep handler under user-tool names (`ext_` tools the coordinator is told about), a read
 * (`ext_sleep_read`, concurrent) and a side effect (`ext_sleep_write`, serial): EXT_SLEEP_TOOLS.
 */
export function registerExtSleepTools(registry: HandlerRegistry): HandlerRegistry {
  registry.register('ext_sleep_read', sleepHandler);
  registry.register('ext_sleep_write', sleepHandler);
  return registry;
}

/** Args `{ms, file?, tag?}`: records `start <pid> <tag>`, sleeps `ms` (or until aborted, recording `aborted <tag>`). */
const sleepHandler: Handler = async function testSleep(args, ctx) {
  const file = typeof args.file === 'string' ? args.file : undefined;
  const tag = typeof args.tag === 'string' ? args.tag : ctx.toolCallId;
  const record = (line: string) => {
    if (file) appendFileSync(file, `${line}\n`);
  };
  record(`start ${process.pid} ${tag} ${Date.now()}`);
  try {
    await abortableSleep(Number(args.ms ?? 0), ctx.signal);
  } catch (e) {
    record(`aborted ${process.pid} ${tag}`);
    throw e;
  }
  record(`end ${process.pid} ${tag} ${Date.now()}`);
  return { pid: process.pid, tag };
};

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
