import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { optionalString, requireString } from '../support/args.js';
import { errorCode } from '../support/node-error.js';
import { isExistingFile, namesDirectory, resolveInWorkspace } from '../support/workspace.js';

export interface EditFileOutput {
  path: string;
  bytes: number;
  /** The file did not exist before (the coordinator then drops find_files dedupe entries). */
  created: boolean;
}

/**
 * edit_file: `{path, content}` writes the whole file (creating parent directories);
 * `{path, old, new}` replaces exactly one occurrence of `old`.
 */
export async function editFile(args: Record<string, unknown>, ctx: HandlerContext): Promise<EditFileOutput> {
  const shownPath = requireString(args, 'path');
  const content = optionalString(args, 'content');
  const oldText = optionalString(args, 'old');
  const newText = optionalString(args, 'new');
  if (namesDirectory(shownPath)) {
    throw new ToolError('handler_error', `path "${shownPath}" names a directory; give the path of a file`);
  }
  const target = await resolveInWorkspace(ctx.workspace, shownPath);

  if (content !== undefined) {
    if (oldText !== undefined || newText !== undefined) {
      throw new ToolError('handler_error', 'give either {path, content} or {path, old, new}, not both');
    }
    const created = !(await isExistingFile(target, shownPath));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
    return { path: shownPath, bytes: Buffer.byteLength(content), created };
  }
  if (oldText === undefined || newText === undefined) {
    throw new ToolError('handler_error', 'give {path, content} to write a whole file, or {path, old, new} to replace');
  }
  if (oldText === '') throw new ToolError('handler_error', '`old` is empty; give the exact text to replace');
  const before = await readExisting(target, shownPath);
  const count = countOccurrences(before, oldText);
  if (count !== 1) {
    const found = count === 0 ? 'found no occurrence' : `found ${count} occurrences`;
    const hint = count === 0 ? '' : '; include more surrounding text in `old` so it matches once';
    throw new ToolError('handler_error', `\`old\` must occur exactly once in ${shownPath}, ${found}${hint}`);
  }
  const at = before.indexOf(oldText);
  // Slices, not String.replace: `$&` and friends in `new` must stay literal.
  const after = before.slice(0, at) + newText + before.slice(at + oldText.length);
  await writeFile(target, after);
  return { path: shownPath, bytes: Buffer.byteLength(after), created: false };
}

/** Occurrences, overlapping ones included: an ambiguous match must not be edited. */
function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) count++;
  return count;
}

async function readExisting(target: string, shownPath: string): Promise<string> {
  try {
    return await readFile(target, 'utf8');
  } catch (e) {
    const code = errorCode(e);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new ToolError('handler_error', `${shownPath} does not exist; write it whole with {path, content}`);
    }
    if (code === 'EISDIR') throw new ToolError('handler_error', `${shownPath} is a directory, not a file`);
    throw e;
  }
}
