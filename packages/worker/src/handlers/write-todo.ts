import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { isPlainObject } from '../support/args.js';
import { resolveInWorkspace } from '../support/workspace.js';

export interface TodoItem {
  text: string;
  done: boolean;
}

/** Where the list is kept, relative to the workspace. */
export const TODO_FILE = '.tool-dispatch/todo.json';

/** write_todo: replaces the session's to-do list (done defaults to false) and returns it. */
export async function writeTodo(args: Record<string, unknown>, ctx: HandlerContext): Promise<{ items: TodoItem[] }> {
  const items = normalizeItems(args.items);
  const target = await resolveInWorkspace(ctx.workspace, TODO_FILE);
  await mkdir(path.dirname(target), { recursive: true });
  // Write then rename, so two concurrent calls never leave a torn file.
  const temp = `${target}.${process.pid}.${ctx.toolCallId}.tmp`;
  await writeFile(temp, `${JSON.stringify({ items }, null, 2)}\n`);
  await rename(temp, target);
  return { items };
}

function normalizeItems(raw: unknown): TodoItem[] {
  if (!Array.isArray(raw)) throw new ToolError('handler_error', 'args.items must be an array of {text, done?}');
  return raw.map((item, i) => {
    if (!isPlainObject(item) || typeof item.text !== 'string' || item.text === '') {
      throw new ToolError('handler_error', `args.items[${i}] must be an object with a non-empty string "text"`);
    }
    if (item.done !== undefined && typeof item.done !== 'boolean') {
      throw new ToolError('handler_error', `args.items[${i}].done must be a boolean`);
    }
    return { text: item.text, done: item.done ?? false };
  });
}
