import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { writeTodo } from './write-todo.js';

let ws: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  ws = await makeWorkspace();
});
afterEach(() => ws.cleanup());

describe('write_todo', () => {
  it('defaults done to false and persists the list in .tool-dispatch/todo.json', async () => {
    const out = await writeTodo({ items: [{ text: 'a' }, { text: 'b', done: true }] }, makeContext(ws.dir));
    const expected = [
      { text: 'a', done: false },
      { text: 'b', done: true },
    ];
    expect(out).toEqual({ items: expected });
    const saved = JSON.parse(await readFile(path.join(ws.dir, '.tool-dispatch/todo.json'), 'utf8'));
    expect(saved).toEqual({ items: expected });
  });

  it('replaces the previous list', async () => {
    await writeTodo({ items: [{ text: 'a' }] }, makeContext(ws.dir));
    await writeTodo({ items: [] }, makeContext(ws.dir));
    const saved = JSON.parse(await readFile(path.join(ws.dir, '.tool-dispatch/todo.json'), 'utf8'));
    expect(saved).toEqual({ items: [] });
  });

  it('rejects an item without text, naming its index', async () => {
    await expect(writeTodo({ items: [{ text: 'ok' }, { done: true }] }, makeContext(ws.dir))).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/args\.items\[1\]/),
    });
  });

  it('refuses to write when .tool-dispatch is a symlink pointing out', async () => {
    const other = await makeWorkspace();
    try {
      await symlink(other.dir, path.join(ws.dir, '.tool-dispatch'));
      await expect(writeTodo({ items: [] }, makeContext(ws.dir))).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/escapes/),
      });
    } finally {
      await other.cleanup();
    }
  });
});
