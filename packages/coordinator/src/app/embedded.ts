import type { Executor, Handler } from '@tool-dispatch/shared';
import { createBuiltinRegistry } from '@tool-dispatch/worker';
import { Engine, type EngineOptions } from '../engine.js';
import { LocalExecutor } from '../executors/local.js';

export type CreateEngineOptions = Omit<EngineOptions, 'executor'> & {
  /** Defaults to embedded execution: the built-in handlers (plus `handlers`) in this process. */
  executor?: Executor;
  handlers?: ReadonlyArray<{ name: string; handler: Handler }>;
};

/** Builds an engine; without an executor it runs embedded, handlers in this process. */
export async function createEngine(options: CreateEngineOptions): Promise<Engine> {
  let executor = options.executor;
  if (!executor) {
    const registry = createBuiltinRegistry();
    for (const h of options.handlers ?? []) registry.register(h.name, h.handler);
    executor = new LocalExecutor(registry, {
      httpAllow: options.config.httpAllow,
      searchUrl: options.config.searchUrl,
    });
  }
  return new Engine({ ...options, executor });
}
