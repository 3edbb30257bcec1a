import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '@tool-dispatch/shared';
import { errorCode } from './node-error.js';

/** More symlink hops than this while resolving a path is a loop (Linux's own limit is 40). */
const MAX_SYMLINK_HOPS = 40;

/**
 * Normalises a workspace-relative path so that `./a.txt`, `b/../a.txt` and `a.txt` compare
 * equal (DESIGN.md pass 3, dedupe invalidation). Pure: touches no file system.
 */
export function normalizeWorkspacePath(p: string): string {
  const normalized = path.posix.normalize(p).replace(/\/+$/, '');
  if (normalized === '') return p.startsWith('/') ? '/' : '.';
  return normalized.replace(/^\.\//, '');
}

/** Whether `p` can only name a directory (`dir/`, `a/.`, `..`, `.`), so no file can be written at it. */
export function namesDirectory(p: string): boolean {
  return /[/\\]$/.test(p) || /(^|[/\\])\.{0,2}$/.test(p);
}

/**
 * Resolves `p` (relative to the workspace) to an absolute path free of symlinks, refusing
 * absolute paths and any path that leaves the workspace through `..` or a symlink.
 * The path need not exist; its deepest existing ancestor must resolve inside the workspace.
 */
export async function resolveInWorkspace(workspace: string, p: string): Promise<string> {
  if (typeof p !== 'string' || p === '') {
    throw new ToolError('handler_error', 'the path is empty; give a path relative to the workspace');
  }
  if (p.includes('\0')) throw new ToolError('handler_error', `the path ${JSON.stringify(p)} contains a NUL byte`);
  if (path.isAbsolute(p) || /^[A-Za-z]:[\\/]/.test(p)) {
    throw new ToolError(
      'handler_error',
      `the path ${JSON.stringify(p)} is absolute; paths are relative to the session workspace`,
    );
  }
  const root = path.resolve(workspace);
  const lexical = path.resolve(root, p);
  if (!isInsideWorkspace(root, lexical)) throw escapes(p, 'through ".."');

  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch {
    throw new ToolError('handler_error', `the session workspace ${root} does not exist`);
  }
  const resolved = await resolveExisting(lexical, 0, p);
  if (!isInsideWorkspace(realRoot, resolved)) throw escapes(p, 'through a symlink');
  return resolved;
}

/**
 * realpath() that also accepts paths whose tail does not exist yet: the deepest existing
 * ancestor is resolved and the rest appended. A dangling symlink is followed to its target,
 * so writing through it cannot create a file outside the workspace.
 */
async function resolveExisting(abs: string, hops: number, original: string): Promise<string> {
  if (hops > MAX_SYMLINK_HOPS) {
    throw new ToolError('handler_error', `the path ${JSON.stringify(original)} goes through a symlink loop`);
  }
  try {
    return await realpath(abs);
  } catch (e) {
    const code = errorCode(e);
    if (code === 'ELOOP') {
      throw new ToolError('handler_error', `the path ${JSON.stringify(original)} goes through a symlink loop`);
    }
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
  }
  const parent = path.dirname(abs);
  if (parent === abs) return abs;
  const link = await lstat(abs).catch(() => undefined);
  if (link?.isSymbolicLink()) {
    const target = path.resolve(parent, await readlink(abs));
    return resolveExisting(target, hops + 1, original);
  }
  return path.join(await resolveExisting(parent, hops, original), path.basename(abs));
}

/** Whether an absolute, symlink-free path is `root` or below it. @internal */
export function isInsideWorkspace(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

function escapes(p: string, how: string): ToolError {
  return new ToolError(
    'handler_error',
    `the path ${JSON.stringify(p)} escapes the session workspace (${how}); paths must stay inside it`,
  );
}

/**
 * Whether a file is at `target` (a missing file, or a missing parent, is not); a directory there
 * is an error naming `shownPath`. For writers that report `created`.
 */
export async function isExistingFile(target: string, shownPath: string): Promise<boolean> {
  try {
    const s = await stat(target);
    if (s.isDirectory()) throw new ToolError('handler_error', `${shownPath} is a directory, not a file`);
    return true;
  } catch (e) {
    const code = errorCode(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw e;
  }
}
