import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { editFile } from './edit-file.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let root: string;
beforeEach(async () => {
  ws = await makeWorkspace();
  root = path.join(ws.dir, 'w');
  await mkdir(root);
  await writeFile(path.join(root, 'a.txt'), 'one two two three');
});
afterEach(() => ws.cleanup());

const ctx = () => makeContext(root);
const read = (p: string) => readFile(path.join(root, p), 'utf8');

describe('edit_file', () => {
  it.each(['dir/', 'a/.', '..', '.', 'sub\\'])('refuses a path that names a directory (%s)', async (p) => {
    await expect(editFile({ path: p, content: 'x' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/names a directory/),
    });
  });

  describe('when given content', () => {
    it('creates the file and its parent directories, reporting created', async () => {
      await expect(editFile({ path: 'new/dir/f.txt', content: 'héllo' }, ctx())).resolves.toEqual({
        path: 'new/dir/f.txt',
        bytes: 6,
        created: true,
      });
      expect(await read('new/dir/f.txt')).toBe('héllo');
    });

    it('overwrites an existing file, reporting created false', async () => {
      await expect(editFile({ path: './a.txt', content: 'x' }, ctx())).resolves.toEqual({
        path: './a.txt',
        bytes: 1,
        created: false,
      });
      expect(await read('a.txt')).toBe('x');
    });
  });

  describe('when given old and new', () => {
    it('replaces the one occurrence', async () => {
      await expect(editFile({ path: 'a.txt', old: 'one', new: '$& 1' }, ctx())).resolves.toEqual({
        path: 'a.txt',
        bytes: 18,
        created: false,
      });
      expect(await read('a.txt')).toBe('$& 1 two two three');
    });

    it('refuses when old occurs more than once, saying how many were found', async () => {
      await expect(editFile({ path: 'a.txt', old: 'two', new: '2' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/found 2 occurrences/),
      });
      expect(await read('a.txt')).toBe('one two two three');
    });

    it('refuses when old does not occur, saying none was found', async () => {
      await expect(editFile({ path: 'a.txt', old: 'four', new: '4' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/found no occurrence/),
      });
    });

    it('counts overlapping occurrences as ambiguous', async () => {
      await writeFile(path.join(root, 'o.txt'), 'aaa');
      await expect(editFile({ path: 'o.txt', old: 'aa', new: 'b' }, ctx())).rejects.toMatchObject({
        message: expect.stringMatching(/found 2 occurrences/),
      });
    });

    it('refuses a missing file, suggesting a whole write', async () => {
      await expect(editFile({ path: 'nope.txt', old: 'a', new: 'b' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/does not exist; write it whole/),
      });
    });
  });

  it('refuses a write through a symlink pointing out of the workspace', async () => {
    await symlink(path.join(ws.dir, 'victim.txt'), path.join(root, 'link.txt'));
    await expect(editFile({ path: 'link.txt', content: 'pwned' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/escapes the session workspace/),
    });
    await expect(readFile(path.join(ws.dir, 'victim.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a new file under a symlinked directory pointing out, creating nothing there', async () => {
    await mkdir(path.join(ws.dir, 'outside'));
    await symlink(path.join(ws.dir, 'outside'), path.join(root, 'out'));
    await expect(editFile({ path: 'out/new/f.txt', content: 'pwned' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/escapes the session workspace \(through a symlink\)/),
    });
    await expect(readdir(path.join(ws.dir, 'outside'))).resolves.toEqual([]);
  });

  it('refuses a replace in a file reached through a symlink pointing out, leaving it unchanged', async () => {
    await writeFile(path.join(ws.dir, 'victim.txt'), 'keep me');
    await symlink('../victim.txt', path.join(root, 'link.txt'));
    await expect(editFile({ path: 'link.txt', old: 'keep', new: 'lost' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/through a symlink/),
    });
    await expect(readFile(path.join(ws.dir, 'victim.txt'), 'utf8')).resolves.toBe('keep me');
  });

  it('refuses an absolute path, saying it is absolute', async () => {
    await expect(editFile({ path: path.join(ws.dir, 'abs.txt'), content: 'x' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/is absolute/),
    });
    await expect(readFile(path.join(ws.dir, 'abs.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses "../x", naming the escape', async () => {
    await expect(editFile({ path: '../x', content: 'x' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/escapes/),
    });
  });

  it('refuses both content and old/new at once', async () => {
    await expect(editFile({ path: 'a.txt', content: 'x', old: 'one', new: '1' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/not both/),
    });
  });
});
