// The worker package's only door: named exports, types with `export type`.

export type { RunningWorker, StartWorkerOptions } from './consume.js';
export { startWorker } from './consume.js';
export type { RunJobOptions } from './execute-job.js';
export { runJob, SETTLE_GRACE_MS } from './execute-job.js';
export { calculate } from './handlers/calculate.js';
export type { EditFileOutput } from './handlers/edit-file.js';
export { editFile } from './handlers/edit-file.js';
export type { FetchPageOutput } from './handlers/fetch-page.js';
export { fetchPage } from './handlers/fetch-page.js';
export { findFiles, MAX_FOUND_PATHS } from './handlers/find-files.js';
export type { HttpRequestOutput } from './handlers/http-request.js';
export { httpRequest } from './handlers/http-request.js';
export type { ReadFileEntry } from './handlers/read-files.js';
export { readFiles } from './handlers/read-files.js';
export type { RunCommandOutput } from './handlers/run-command.js';
export { KILL_GRACE_MS, runCommand } from './handlers/run-command.js';
export type { SearchResult } from './handlers/search-web.js';
export { MAX_SEARCH_RESULTS, searchWeb } from './handlers/search-web.js';
export type { TodoItem } from './handlers/write-todo.js';
export { TODO_FILE, writeTodo } from './handlers/write-todo.js';
export type { MetricsServer, MetricsServerOptions } from './metrics.js';
export { startMetricsServer, WorkerMetrics } from './metrics.js';
export type { CheckedTarget, CheckUrlOptions, ResolveHost } from './net-guard.js';
export { checkUrl, isHostAllowed, isPrivateAddress } from './net-guard.js';
export { createBuiltinRegistry, HandlerRegistry } from './registry.js';
export { normalizeWorkspacePath, resolveInWorkspace } from './workspace.js';
