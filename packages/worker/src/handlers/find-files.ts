import { type Dirent, readdir, realpath } from 'node:fs';
import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { glob } from 'tinyglobby';
import { requireString } from '../support/args.js';
import { isInsideWorkspace, resolveInWorkspace } from '../support/workspace.js';

/** Most paths one find_files call returns; the rest are cut and flagged. */
export const MAX_FOUND_PATHS = 5000;

const IGNORED = ['**/node_modules/**', '**/.git/**'];

/** A `..` segment anywhere, including inside a brace alternative such as `{..,src}`. */
const PARENT_SEGMENT = /(^|[/{,])\.\.($|[/},])/;

/**
 * find_files: workspace files matching a glob, as sorted workspace-relative paths.
 * Symlinks met while crawling are skipped (neither followed nor listed); a directory the
 * pattern names (`alias/*`) is read only when it resolves inside the workspace.
 * node_modules and .git are skipped.
 */
export async function findFiles(
  args: Record<string, unknown>,
  ctx: HandlerContext,
): Promise<{ paths: string[]; truncated?: true }> {
  const pattern = requireString(args, 'pattern');
  if (pattern.trim() === '')
    throw new ToolError('handler_error', 'the pattern is empty; give a glob such as "**/*.ts"');
  if (pattern.startsWith('/') || /^[A-Za-z]:[\\/]/.test(pattern)) {
    throw new ToolError(
      'handler_error',
      `the pattern ${JSON.stringify(pattern)} is absolute; patterns are relative to the session workspace`,
    );
  }
  if (PARENT_SEGMENT.test(pattern)) {
    throw new ToolError(
      'handler_error',
      `the pattern ${JSON.stringify(pattern)} escapes the session workspace (".." is not allowed)`,
    );
  }
  const root = await resolveInWorkspace(ctx.workspace, '.');
  const found = await glob(pattern, {
    cwd: root,
    ignore: IGNORED,
    onlyFiles: true,
    followSymbolicLinks: false,
    fs: { readdir: readdirInside(root) },
    signal: ctx.signal,
  });
  // Belt and braces: whatever the glob library made of the pattern, nothing outside is listed.
  const paths = found.filter((p) => !p.startsWith('../') && !p.startsWith('/')).sort(byCodePoint);
  if (paths.length > MAX_FOUND_PATHS) return { paths: paths.slice(0, MAX_FOUND_PATHS), truncated: true };
  return { paths };
}

/**
 * The crawler's readdir, reading a directory only when its realpath is inside the workspace.
 * The glob starts its crawl at the pattern's literal prefix (`up/x` for `up/x/*`) and reads
 * that directory through any symlink on the way, so each read is checked, not just the root.
 */
function readdirInside(realRoot: string): typeof readdir {
  function readdirChecked(
    dir: string,
    options: { withFileTypes: true },
    callback: (error: NodeJS.ErrnoException | null, entries?: Dirent[]) => void,
  ): void {
    realpath(dir, function checkInside(error, resolved) {
      if (error) return callback(error);
      // Outside: an empty directory, so nothing there is listed or descended into.
      if (!isInsideWorkspace(realRoot, resolved)) return callback(null, []);
      // Read the path that was checked, not `dir` again: a swapped symlink cannot redirect it.
      readdir(resolved, options, callback);
    });
  }
  // The crawler (fdir) calls only the `(path, {withFileTypes: true}, callback)` form.
  return readdirChecked as unknown as typeof readdir;
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
