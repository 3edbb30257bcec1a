import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { glob } from 'tinyglobby';
import { requireString } from '../args.js';
import { resolveInWorkspace } from '../workspace.js';

/** Most paths one find_files call returns; the rest are cut and flagged. */
export const MAX_FOUND_PATHS = 5000;

const IGNORED = ['**/node_modules/**', '**/.git/**'];

/** A `..` segment anywhere, including inside a brace alternative such as `{..,src}`. */
const PARENT_SEGMENT = /(^|[/{,])\.\.($|[/},])/;

/**
 * find_files: workspace files matching a glob, as sorted workspace-relative paths.
 * Symlinked directories are not followed, node_modules and .git are skipped.
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
    signal: ctx.signal,
  });
  // Belt and braces: whatever the glob library made of the pattern, nothing outside is listed.
  const paths = found.filter((p) => !p.startsWith('../') && !p.startsWith('/')).sort(byCodePoint);
  if (paths.length > MAX_FOUND_PATHS) return { paths: paths.slice(0, MAX_FOUND_PATHS), truncated: true };
  return { paths };
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
