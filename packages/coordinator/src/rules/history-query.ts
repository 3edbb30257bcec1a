import { isSuccess } from '@tool-dispatch/shared';
import type { HistoryEntry } from '../model.js';
import { normalizePath } from './dedupe.js';

/** The built-ins answered from the session's recorded results (pass 1, like find_tools). */
export const HISTORY_TOOLS = ['file_history', 'error_history'] as const;
export type HistoryTool = (typeof HISTORY_TOOLS)[number];
export const isHistoryTool = (name: string): name is HistoryTool => (HISTORY_TOOLS as readonly string[]).includes(name);

/** Entries returned when a call gives no `limit` (API.md: 1–100, default 20). */
export const DEFAULT_HISTORY_LIMIT = 20;
/** How many of the session's most recent results a history tool looks through (older ones are not listed). */
export const HISTORY_SCAN_LIMIT = 5_000;

/** Tools whose recorded results file_history lists when they named or found the path. */
const FILE_TOOLS: ReadonlySet<string> = new Set(['read_files', 'edit_file', 'find_files', 'download_file']);

/** The entry as a history tool lists it: where and when, what ended how. */
function listed(e: HistoryEntry): Record<string, unknown> {
  const out: Record<string, unknown> = {
    round: e.round,
    run: e.run,
    at: e.at,
    id: e.id,
    name: e.name,
    status: e.status,
  };
  if (e.error) out.error = e.error;
  return out;
}

function foundPaths(e: HistoryEntry): string[] {
  const paths = (e.output as { paths?: unknown } | undefined)?.paths;
  return Array.isArray(paths) ? paths.filter((p): p is string => typeof p === 'string').map(normalizePath) : [];
}

/** Whether a file tool's recorded result named (or, for find_files, found) the path. */
function touches(e: HistoryEntry, path: string): boolean {
  if (!FILE_TOOLS.has(e.name)) return false;
  if (e.paths?.includes(path)) return true;
  return e.name === 'find_files' && foundPaths(e).includes(path);
}

/** What file_history shows of an edit, a download or a command beside its status. */
function detailOf(e: HistoryEntry): Record<string, unknown> {
  if (e.status !== 'ok' || typeof e.output !== 'object' || e.output === null) return {};
  const o = e.output as Record<string, unknown>;
  if (e.name === 'edit_file') return { bytes: o.bytes, ...(o.created === undefined ? {} : { created: o.created }) };
  if (e.name === 'download_file') return { bytes: o.bytes, contentType: o.contentType };
  if (e.name === 'run_command') return { exitCode: o.exitCode };
  return {};
}

/**
 * Why a file_history path is refused (API.md: paths are relative to the session workspace; an
 * absolute one, or one that leaves it through `..`, ends error/handler_error saying so), or
 * undefined. Checked by its spelling: the records name paths as the calls wrote them, normalised.
 */
export function historyPathProblem(path: string): string | undefined {
  const slashed = path.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:\//.test(slashed))
    return `file_history: ${JSON.stringify(path)} is an absolute path; paths are relative to the session workspace`;
  const n = normalizePath(slashed);
  if (n === '..' || n.startsWith('../'))
    return `file_history: ${JSON.stringify(path)} escapes the session workspace; paths are relative to it`;
  return undefined;
}

/**
 * `file_history({path, limit?})` (API.md v1.1) over the session's results, oldest first: the
 * file tools' results that named or found `path` (normalised as in pass 3), and every
 * run_command flagged `mayHaveTouched`, newest first, at most `limit`.
 */
export function fileHistory(entries: readonly HistoryEntry[], args: Record<string, unknown>): { entries: unknown[] } {
  const path = normalizePath(String(args.path));
  const limit = typeof args.limit === 'number' ? args.limit : DEFAULT_HISTORY_LIMIT;
  const out: unknown[] = [];
  for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
    const e = entries[i] as HistoryEntry;
    if (e.name === 'run_command') out.push({ ...listed(e), ...detailOf(e), mayHaveTouched: true });
    else if (touches(e, path)) out.push({ ...listed(e), ...detailOf(e) });
  }
  return { entries: out };
}

/**
 * `error_history({tool?, limit?})` (API.md v1.1) over the session's results, oldest first: those
 * whose status is not ok, deduped or cached (of `tool` when given), newest first, at most `limit`.
 */
export function errorHistory(entries: readonly HistoryEntry[], args: Record<string, unknown>): { entries: unknown[] } {
  const tool = typeof args.tool === 'string' ? args.tool : undefined;
  const limit = typeof args.limit === 'number' ? args.limit : DEFAULT_HISTORY_LIMIT;
  const out: unknown[] = [];
  for (let i = entries.length - 1; i >= 0 && out.length < limit; i--) {
    const e = entries[i] as HistoryEntry;
    if (!isSuccess(e.status) && (tool === undefined || e.name === tool)) out.push(listed(e));
  }
  return { entries: out };
}

/** The answer of a history tool's call (validated args). */
export function answerHistoryCall(
  tool: HistoryTool,
  entries: readonly HistoryEntry[],
  args: Record<string, unknown>,
): { entries: unknown[] } {
  return tool === 'file_history' ? fileHistory(entries, args) : errorHistory(entries, args);
}

/** Whether a result is one error_history lists (a new one makes the run's earlier error_history answers stale). */
export const isListedError = (status: HistoryEntry['status']): boolean => !isSuccess(status);
