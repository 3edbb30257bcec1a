import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { type HttpResponse, withHttpResponse } from '../net/http-client.js';
import { requireString } from '../support/args.js';
import { errorCode, errorMessage } from '../support/node-error.js';
import { isExistingFile, namesDirectory, normalizeWorkspacePath, resolveInWorkspace } from '../support/workspace.js';

/** Most bytes one download writes (API.md: 64 MiB); a larger body fails the call and writes nothing. */
export const MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024;

export interface DownloadFileOutput {
  /** The path as given, normalised (`./a/../b.bin` is `b.bin`). */
  path: string;
  bytes: number;
  /** The response's Content-Type, or null when it sent none. */
  contentType: string | null;
  /** The file did not exist before. Beyond API.md, as edit_file's (find_files invalidation). */
  created: boolean;
}

export interface DownloadFileOptions {
  /** The cap on the body's bytes (after content decoding); MAX_DOWNLOAD_BYTES by default. */
  maxBytes?: number;
}

interface ResolvedDownloadFileOptions {
  maxBytes: number;
}

export type DownloadFileHandler = (args: Record<string, unknown>, ctx: HandlerContext) => Promise<DownloadFileOutput>;

const REQUEST_HEADERS = { accept: '*/*', 'user-agent': 'tool-dispatch/0.1 (+download_file)' };

/**
 * A download_file handler with its own cap (tests use a small one).
 *
 * download_file GETs `url` under http_request's network rules (the net guard on every redirect,
 * TD_HTTP_ALLOW) and writes the body to the workspace `path` (escape rules apply, parent
 * directories are created). Unlike http_request, a status other than 2xx fails the call with
 * handler_error naming it: a 404 page saved under the file's name would pass for the download.
 * The body streams into a temp file beside the target, renamed over it only when complete; past
 * the cap, on a failed read, an abort or the deadline the temp file is removed and the target
 * is left as it was.
 */
export function createDownloadFile(options: DownloadFileOptions = {}): DownloadFileHandler {
  const resolved = resolveDownloadFileOptions(options);
  return function downloadFile(args, ctx) {
    return download(args, ctx, resolved);
  };
}

/** download_file with the 64 MiB cap of API.md. */
export const downloadFile: DownloadFileHandler = createDownloadFile();

function resolveDownloadFileOptions(options: DownloadFileOptions): ResolvedDownloadFileOptions {
  const maxBytes = options.maxBytes ?? MAX_DOWNLOAD_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new Error(`download_file: maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  return { maxBytes };
}

async function download(
  args: Record<string, unknown>,
  ctx: HandlerContext,
  options: ResolvedDownloadFileOptions,
): Promise<DownloadFileOutput> {
  const url = requireString(args, 'url');
  const shownPath = requireString(args, 'path');
  if (namesDirectory(shownPath)) {
    throw new ToolError('handler_error', `path "${shownPath}" names a directory; give the path of a file`);
  }
  // The path is checked before anything is requested: a refused path makes no request.
  const target = await resolveInWorkspace(ctx.workspace, shownPath);
  const created = !(await isExistingFile(target, shownPath));
  const file: TargetFile = { workspace: ctx.workspace, shownPath, target };
  const saved = await withHttpResponse(
    { url, method: 'GET', headers: REQUEST_HEADERS },
    { signal: ctx.signal, allow: ctx.config.httpAllow },
    function saveResponse(response) {
      return saveBody(response, file, { maxBytes: options.maxBytes, signal: ctx.signal });
    },
  );
  return { path: normalizeWorkspacePath(shownPath), bytes: saved.bytes, contentType: saved.contentType, created };
}

/** Where a download goes: the path as the call gave it, and what it resolved to. */
interface TargetFile {
  workspace: string;
  shownPath: string;
  target: string;
}

async function saveBody(
  response: HttpResponse,
  file: TargetFile,
  limits: { maxBytes: number; signal: AbortSignal },
): Promise<{ bytes: number; contentType: string | null }> {
  if (response.status < 200 || response.status > 299) {
    throw new ToolError(
      'handler_error',
      `${response.url} answered with status ${response.status}, not a success; nothing was written to ${file.shownPath}`,
    );
  }
  refuseAnnouncedSize(response, file, limits.maxBytes);
  const dir = path.dirname(file.target);
  await fileStep(file, () => mkdir(dir, { recursive: true }));
  await checkUnchanged(file);
  // A hidden name of fixed length (the target's own name may already be as long as a name can be).
  const temp = path.join(dir, `.td-download-${randomBytes(8).toString('hex')}`);
  let handle: FileHandle | undefined;
  try {
    // `wx`: the name is fresh, so an existing file or symlink there makes this fail, never a write through it.
    const opened = await fileStep(file, () => open(temp, 'wx'));
    handle = opened;
    const bytes = await writeCapped(response, opened, file, limits.maxBytes);
    handle = undefined;
    await fileStep(file, () => opened.close());
    limits.signal.throwIfAborted();
    await checkUnchanged(file);
    await fileStep(file, () => rename(temp, file.target));
    return { bytes, contentType: response.headers['content-type'] ?? null };
  } catch (e) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw e;
  }
}

/** Fails before reading when the server announces more than the cap (an undecoded body's Content-Length). */
function refuseAnnouncedSize(response: HttpResponse, file: TargetFile, maxBytes: number): void {
  const encoding = response.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') return;
  const announced = Number(response.headers['content-length']);
  if (Number.isFinite(announced) && announced > maxBytes) {
    throw new ToolError(
      'handler_error',
      `${response.url} announces ${announced} bytes (Content-Length), more than the download limit of ` +
        `${describeBytes(maxBytes)}; nothing was written to ${file.shownPath}`,
    );
  }
}

/** Copies the body into the file, failing as soon as it passes `maxBytes`; returns the bytes written. */
async function writeCapped(
  response: HttpResponse,
  handle: FileHandle,
  file: TargetFile,
  maxBytes: number,
): Promise<number> {
  let bytes = 0;
  // Leaving the loop by a throw destroys the body, so nothing past the cap is read.
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) {
      throw new ToolError(
        'handler_error',
        `${response.url} is larger than the download limit of ${describeBytes(maxBytes)}; ` +
          `nothing was written to ${file.shownPath}`,
      );
    }
    await fileStep(file, () => writeAll(handle, chunk));
  }
  return bytes;
}

async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.byteLength; ) {
    const { bytesWritten } = await handle.write(chunk, offset);
    offset += bytesWritten;
  }
}

/**
 * Re-resolves the path and fails when it no longer leads where it did (a directory on the
 * way swapped for a symlink while the download ran), so the rename cannot land outside.
 */
async function checkUnchanged(file: TargetFile): Promise<void> {
  const now = await resolveInWorkspace(file.workspace, file.shownPath);
  if (now !== file.target) {
    throw new ToolError(
      'handler_error',
      `${file.shownPath} changed while downloading (it now resolves elsewhere); nothing was written`,
    );
  }
}

/** What a file-system error code means for the file being written. */
const FILE_ERRORS: Record<string, string> = {
  EISDIR: 'a directory is in the way',
  ENOTDIR: 'a file is in the way of its directory',
  ENOSPC: 'the disk is full',
  EACCES: 'permission denied',
};

/** Runs a file-system step, turning its failure into a ToolError about the file (not about the request). */
async function fileStep<T>(file: TargetFile, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    const code = errorCode(e);
    const what = (code === undefined ? undefined : FILE_ERRORS[code]) ?? errorMessage(e);
    throw new ToolError('handler_error', `cannot write ${file.shownPath}: ${what}`);
  }
}

function describeBytes(n: number): string {
  const mib = 1024 * 1024;
  return n >= mib && n % mib === 0 ? `${n / mib} MiB` : `${n} bytes`;
}
