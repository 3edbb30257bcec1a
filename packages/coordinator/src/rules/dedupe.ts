import path from 'node:path';
import type { DedupeInvalidation } from '../model.js';

/** Normalises a workspace-relative path so `./a.txt`, `b/../a.txt` and `a.txt` compare equal. */
export function normalizePath(p: string): string {
  const n = path.posix.normalize(p.replace(/\\/g, '/'));
  return n.replace(/^(\.\/)+/, '').replace(/\/+$/, '') || '.';
}

/** An http_request call's method, upper-cased; GET when absent. */
export const httpMethod = (args: Record<string, unknown>): string =>
  typeof args.method === 'string' ? args.method.toUpperCase() : 'GET';

/** DESIGN.md step 3: whether a call may be answered from an earlier identical one. */
export function isDedupable(
  tool: { name: string; dedupe: boolean } | undefined,
  name: string,
  args: Record<string, unknown>,
): boolean {
  if (tool && !tool.dedupe) return false;
  if (name === 'run_command' || name === 'edit_file' || name.startsWith('generate_')) return false;
  // A download writes the workspace (beyond DESIGN.md's list): each call fetches the URL again.
  // write_todo saves its list in the workspace: a repeat of an earlier list must save it again,
  // or the saved list and the one the model was told of part ways.
  if (name === 'download_file' || name === 'write_todo') return false;
  if (name === 'http_request' && httpMethod(args) !== 'GET') return false;
  return true;
}

/** The normalised paths a read_files or file_history call covers, kept with its dedupe entry (for invalidation). */
export function pathsRead(name: string, args: Record<string, unknown>): string[] | undefined {
  if (name === 'file_history') return typeof args.path === 'string' ? [normalizePath(args.path)] : undefined;
  if (name !== 'read_files' || !Array.isArray(args.paths)) return undefined;
  return args.paths.filter((p): p is string => typeof p === 'string').map(normalizePath);
}

/** Tools that write one workspace path, `args.path` (pass 3 invalidates the run's reads of it). */
const PATH_WRITERS: ReadonlySet<string> = new Set(['edit_file', 'download_file']);

/** The normalised workspace paths a call names in its args (recorded with its history entry for file_history). */
export function pathsNamed(name: string, args: Record<string, unknown>): string[] | undefined {
  if (PATH_WRITERS.has(name)) return typeof args.path === 'string' ? [normalizePath(args.path)] : undefined;
  return name === 'read_files' ? pathsRead(name, args) : undefined;
}

/**
 * Which dedupe entries a call's side effect invalidates (DESIGN.md pass 3): an edit or a download
 * the reads and file histories of its path (and every find_files when it created the file), a
 * command every one of them.
 * `created` is known after execution; before it (pass 1 lookahead) assume it may create.
 */
export function invalidationsOf(
  name: string,
  args: Record<string, unknown>,
  created: boolean | undefined,
): DedupeInvalidation[] {
  if (PATH_WRITERS.has(name) && typeof args.path === 'string') {
    const paths = [normalizePath(args.path)];
    const out: DedupeInvalidation[] = [
      { tool: 'read_files', paths },
      { tool: 'file_history', paths },
    ];
    if (created !== false) out.push({ tool: 'find_files' });
    return out;
  }
  if (name === 'run_command') return [{ tool: 'read_files' }, { tool: 'find_files' }, { tool: 'file_history' }];
  return [];
}

/** Whether an invalidation covers an entry of `tool` that read `paths`. */
export function covers(inv: DedupeInvalidation, tool: string, paths: readonly string[] | undefined): boolean {
  if (inv.tool !== tool) return false;
  if (!inv.paths) return true;
  return (paths ?? []).some((p) => inv.paths?.includes(p));
}
