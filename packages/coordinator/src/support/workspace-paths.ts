import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';

/** Links followed at most, as the kernel's own limit (ELOOP past it). */
const MAX_SYMLINK_HOPS = 40;

/**
 * The workspace-relative path `rel` reaches once symlinks are followed (DESIGN.md pass 3: a link
 * and its target are one path), POSIX-spelled; undefined when it leaves the workspace, loops, or
 * the workspace cannot be read (the spelling alone then stands). A tail that does not exist yet is
 * kept as spelled under its deepest existing directory, and a dangling link is followed to its target.
 */
export async function realWorkspacePath(workspace: string, rel: string): Promise<string | undefined> {
  try {
    const root = await realpath(workspace);
    const resolved = await resolveExisting(path.resolve(workspace, rel), 0);
    if (resolved === undefined) return undefined;
    const inside = path.relative(root, resolved);
    if (inside === '') return '.';
    if (inside.startsWith('..') || path.isAbsolute(inside)) return undefined;
    return inside.split(path.sep).join('/');
  } catch {
    return undefined;
  }
}

async function resolveExisting(abs: string, hops: number): Promise<string | undefined> {
  if (hops > MAX_SYMLINK_HOPS) return undefined;
  try {
    return await realpath(abs);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
  }
  const parent = path.dirname(abs);
  if (parent === abs) return abs;
  const link = await lstat(abs).catch(() => undefined);
  if (link?.isSymbolicLink()) return resolveExisting(path.resolve(parent, await readlink(abs)), hops + 1);
  const dir = await resolveExisting(parent, hops);
  return dir === undefined ? undefined : path.join(dir, path.basename(abs));
}
