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
  if (name === 'http_request' && httpMethod(args) !== 'GET') return false;
  return true;
}

/** The normalised paths a read_files call covers, kept with its dedupe entry. */
export function pathsRead(name: string, args: Record<string, unknown>): string[] | undefined {
  if (name !== 'read_files' || !Array.isArray(args.paths)) return undefined;
  return args.paths.filter((p): p is string => typeof p === 'string').map(normalizePath);
}

/**
 * Which dedupe entries a call's side effect invalidates (DESIGN.md pass 3).
 * `created` is known after execution; before it (pass 1 lookahead) assume it may create.
 */
export function invalidationsOf(
  name: string,
  args: Record<string, unknown>,
  created: boolean | undefined,
): DedupeInvalidation[] {
  if (name === 'edit_file' && typeof args.path === 'string') {
    const out: DedupeInvalidation[] = [{ tool: 'read_files', paths: [normalizePath(args.path)] }];
    if (created !== false) out.push({ tool: 'find_files' });
    return out;
  }
  if (name === 'run_command') return [{ tool: 'read_files' }, { tool: 'find_files' }];
  return [];
}

/** Whether an invalidation covers an entry of `tool` that read `paths`. */
export function covers(inv: DedupeInvalidation, tool: string, paths: readonly string[] | undefined): boolean {
  if (inv.tool !== tool) return false;
  if (!inv.paths) return true;
  return (paths ?? []).some((p) => inv.paths?.includes(p));
}
