import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import {
  type HandlerContext,
  lineCount,
  MAX_ARTIFACT_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_STREAM_BYTES,
} from '@tool-dispatch/shared';
import { optionalPositiveInt, requireStringArray } from '../support/args.js';
import { errorCode, errorMessage } from '../support/node-error.js';
import { resolveInWorkspace } from '../support/workspace.js';

export type ReadFileEntry =
  | { path: string; content: string; truncated?: true; totalLines?: number }
  | { path: string; content: null; error: string };

/** A page of lines (API.md v1.2): `offset` the first line (1-based), `limit` how many; absent, the whole file. */
interface Page {
  offset: number;
  limit: number | undefined;
}

/** Largest `offset` and `limit` read_files takes. */
export const MAX_LINE_ARG = 100_000_000;

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
  const offset = optionalPositiveInt(args, 'offset', MAX_LINE_ARG);
  const limit = optionalPositiveInt(args, 'limit', MAX_LINE_ARG);
  const page = offset !== undefined || limit !== undefined ? { offset: offset ?? 1, limit } : undefined;
  // Under a result budget the output goes to an artifact past the budget: read whole files (up to MAX_ARTIFACT_BYTES).
  const caps = ctx.resultBudget
    ? { file: MAX_ARTIFACT_BYTES, output: MAX_ARTIFACT_BYTES }
    : { file: MAX_STREAM_BYTES, output: MAX_OUTPUT_BYTES };
  // Resolve all first: a path escaping the workspace is a bad call, not a bad file.
  const resolved = await Promise.all(paths.map((p) => resolveInWorkspace(ctx.workspace, p)));
  let budget = caps.output - OUTPUT_MARGIN_BYTES;
  const files: ReadFileEntry[] = [];
  for (const [i, p] of paths.entries()) {
    ctx.signal.throwIfAborted();
    let entry = await readOne(p, resolved[i] as string, caps.file, page);
    const size = Buffer.byteLength(JSON.stringify(entry));
    if (size > budget) {
      entry = {
        path: p,
        content: null,
        error: `not read: the call's output would pass its limit of ${caps.output} bytes; read this file in another call${page ? '' : ', or a page of it with offset and limit'}`,
      };
    } else {
      budget -= size;
    }
    files.push(entry);
  }
  return { files };
}

/** The lines `page` asks for, with the file's line count; each line keeps its line break, so pages put together are the file. */
function pageOf(text: string, page: Page): { content: string; totalLines: number } {
  const totalLines = lineCount(text);
  let start = 0;
  for (let line = 1; line < page.offset && start < text.length; line++) {
    const nl = text.indexOf('\n', start);
    start = nl === -1 ? text.length : nl + 1;
  }
  let end = start;
  if (page.limit === undefined) end = text.length;
  else {
    for (let n = 0; n < page.limit && end < text.length; n++) {
      const nl = text.indexOf('\n', end);
      end = nl === -1 ? text.length : nl + 1;
    }
  }
  return { content: text.slice(start, end), totalLines };
}

async function readOne(shownPath: string, absPath: string, cap: number, page?: Page): Promise<ReadFileEntry> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    // Check before opening: opening a FIFO for reading would block until someone writes.
    const before = await stat(absPath);
    if (before.isDirectory()) return { path: shownPath, content: null, error: 'is a directory' };
    if (!before.isFile()) return { path: shownPath, content: null, error: 'is not a regular file' };
    handle = await open(absPath, constants.O_RDONLY | constants.O_NONBLOCK);
    const { size } = await handle.stat();
    // A page is cut from the whole file (up to MAX_ARTIFACT_BYTES), so line numbers hold across pages.
    const readCap = page ? Math.max(cap, MAX_ARTIFACT_BYTES) : cap;
    const buffer = Buffer.alloc(Math.min(size, readCap));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const truncated = size > readCap;
    // stream:true holds back a multi-byte character cut in half at the cap.
    const text = new TextDecoder('utf-8').decode(buffer.subarray(0, bytesRead), { stream: truncated });
    if (!page)
      return truncated ? { path: shownPath, content: text, truncated: true } : { path: shownPath, content: text };
    const { content, totalLines } = pageOf(text, page);
    const cut = Buffer.byteLength(content) > cap ? cutAt(content, cap) : content;
    return truncated || cut !== content
      ? { path: shownPath, content: cut, truncated: true, totalLines }
      : { path: shownPath, content: cut, totalLines };
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

/** The first `bytes` bytes of a text's UTF-8, never half a character. */
function cutAt(text: string, bytes: number): string {
  return new TextDecoder('utf-8').decode(Buffer.from(text, 'utf8').subarray(0, bytes), { stream: true });
}
