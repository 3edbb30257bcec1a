import type { Handler } from '@tool-dispatch/shared';
import { calculate } from './handlers/calculate.js';
import { downloadFile } from './handlers/download-file.js';
import { editFile } from './handlers/edit-file.js';
import { fetchPage } from './handlers/fetch-page.js';
import { findFiles } from './handlers/find-files.js';
import { httpRequest } from './handlers/http-request.js';
import { readFiles } from './handlers/read-files.js';
import { runCommand } from './handlers/run-command.js';
import { searchWeb } from './handlers/search-web.js';
import { writeTodo } from './handlers/write-todo.js';

/** Tool name → handler, for the tools this worker can run. */
export class HandlerRegistry {
  private readonly handlers = new Map<string, Handler>();

  /** Registers a handler; registering a name twice is a bug and throws. */
  register(name: string, handler: Handler): void {
    if (name === '') throw new Error('a handler needs a tool name');
    if (this.handlers.has(name)) throw new Error(`a handler for ${name} is already registered`);
    this.handlers.set(name, handler);
  }

  get(name: string): Handler | undefined {
    return this.handlers.get(name);
  }

  has(name: string): boolean {
    return this.handlers.has(name);
  }

  /** Registered tool names, sorted. */
  names(): string[] {
    return [...this.handlers.keys()].sort();
  }
}

/**
 * A registry holding every handler the worker ships (API.md "Built-in tools").
 * find_tools and run_tool are not here: the coordinator answers them itself.
 */
export function createBuiltinRegistry(): HandlerRegistry {
  const registry = new HandlerRegistry();
  registry.register('read_files', readFiles);
  registry.register('find_files', findFiles);
  registry.register('edit_file', editFile);
  registry.register('run_command', runCommand);
  registry.register('http_request', httpRequest);
  registry.register('fetch_page', fetchPage);
  registry.register('download_file', downloadFile);
  registry.register('search_web', searchWeb);
  registry.register('calculate', calculate);
  registry.register('write_todo', writeTodo);
  return registry;
}
