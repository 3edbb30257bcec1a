import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { type HandlerContext, MAX_OUTPUT_BYTES, MAX_STREAM_BYTES } from '@tool-dispatch/shared';
import { requireStringArray } from '../args.js';
import { errorCode, errorMessage } from '../node-error.js';
import { resolveInWorkspace } from '../workspace.js';

export type ReadFileEntry =
  | { path: string; content: string; truncated?: true }
  | { path: string; content: null; error: string };

/** Room left in the call's output for the envelope around the files. */
const OUTPUT_MARGIN_BYTES = 4096;

/**
 * read_files: reads each path (as given) from the workspace. A file that cannot be read gets
 * an entry with `error` instead of failing the whole call; a path that escapes the workspace
 * fails the call. Each file is cut at MAX_STREAM_BYTES, and files that would push the output
 * past MAX_OUTPUT_BYTES are left unread with a note, so the model can ask for them again.
 */
export async function readFiles(
  args: Record<string, unknown>,
  ctx: HandlerContext,
): Promise<{ files: ReadFileEntry[] }> {
  const paths = requireStringArray(args, 'paths');
  // Resolve all first: a path escaping the workspace is a bad call, not a bad file.
  const resolved = await Promise.all(paths.map((p) => resolveInWorkspace(ctx.workspace, p)));
  let budget = MAX_OUTPUT_BYTES - OUTPUT_MARGIN_BYTES;
  const files: ReadFileEntry[] = [];
  for (const [i, p] of paths.entries()) {
    ctx.signal.throwIfAborted();
    let entry = await readOne(p, resolved[i] as string);
    const size = Buffer.byteLength(JSON.stringify(entry));
    if (size > budget) {
      entry = {
        path: p,
        content: null,
        error: `not read: the call's output would pass its limit of ${MAX_OUTPUT_BYTES} bytes; read this file in another call`,
      };
    } else {
      budget -= size;
    }
    files.push(entry);
  }
  return { files };
}

async function readOne(shownPath: string, absPath: string): Promise<ReadFileEntry> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    // Check before opening: opening a FIFO for reading would block until someone writes.
    const before = await stat(absPath);
    if (before.isDirectory()) return { path: shownPath, content: null, error: 'is a directory' };
    if (!before.isFile()) return { path: shownPath, content: null, error: 'is not a regular file' };
    handle = await open(absPath, constants.O_RDONLY | constants.O_NONBLOCK);
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.min(size, MAX_STREAM_BYTES));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const truncated = size > MAX_STREAM_BYTES;
    // stream:true holds back a multi-byte character cut in half at the cap.
    const content = new TextDecoder('utf-8').decode(buffer.subarray(0, bytesRead), { stream: truncated });
    return truncated ? { path: shownPath, content, truncated: true } : { path: shownPath, content };
  } catch (e) {
    const code = errorCode(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { path: shownPath, content: null, error: 'not found' };
    if (code === 'EISDIR') return { path: shownPath, content: null, error: 'is a directory' };
    if (code === 'EACCES' || code === 'EPERM') return { path: shownPath, content: null, error: 'permission denied' };
    return { path: shownPath, content: null, error: errorMessage(e) };
  } finally {
    await handle?.close();
  }
}
