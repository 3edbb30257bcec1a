import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeWorkspacePath, resolveInWorkspace } from './workspace.js';

let base: string;
let ws: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), 'td-ws-')));
  ws = path.join(base, 'ws');
  await mkdir(path.join(ws, 'sub'), { recursive: true });
  await writeFile(path.join(ws, 'a.txt'), 'a');
  await writeFile(path.join(base, 'secret.txt'), 'secret');
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('normalizeWorkspacePath', () => {
  it('treats ./a.txt, b/../a.txt and a.txt as one path', () => {
    expect(normalizeWorkspacePath('./a.txt')).toBe('a.txt');
    expect(normalizeWorkspacePath('b/../a.txt')).toBe('a.txt');
    expect(normalizeWorkspacePath('a.txt')).toBe('a.txt');
  });

  it('collapses duplicate and trailing slashes and keeps the workspace root as "."', () => {
    expect(normalizeWorkspacePath('src//lib/')).toBe('src/lib');
    expect(normalizeWorkspacePath('./')).toBe('.');
    expect(normalizeWorkspacePath('x/..')).toBe('.');
  });

  it('leaves an escaping path recognisably escaping', () => {
    expect(normalizeWorkspacePath('a/../../x')).toBe('../x');
  });
});

describe('resolveInWorkspace', () => {
  it('resolves a relative path to an absolute path inside the workspace', async () => {
    await expect(resolveInWorkspace(ws, 'a.txt')).resolves.toBe(path.join(ws, 'a.txt'));
    await expect(resolveInWorkspace(ws, './sub/../a.txt')).resolves.toBe(path.join(ws, 'a.txt'));
  });

  it('accepts a path that does not exist yet', async () => {
    await expect(resolveInWorkspace(ws, 'new/dir/file.txt')).resolves.toBe(path.join(ws, 'new/dir/file.txt'));
  });

  it('refuses an absolute path, saying it is absolute', async () => {
    await expect(resolveInWorkspace(ws, '/etc/passwd')).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/"\/etc\/passwd" is absolute/),
    });
  });

  it('refuses a .. escape, saying it escapes the workspace', async () => {
    await expect(resolveInWorkspace(ws, '../x')).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/"\.\.\/x" escapes the session workspace/),
    });
    await expect(resolveInWorkspace(ws, 'sub/../../secret.txt')).rejects.toMatchObject({ code: 'handler_error' });
  });

  it('refuses an empty path or one with a NUL byte', async () => {
    await expect(resolveInWorkspace(ws, '')).rejects.toMatchObject({ code: 'handler_error' });
    await expect(resolveInWorkspace(ws, 'a\0b')).rejects.toMatchObject({ message: expect.stringMatching(/NUL/) });
  });

  describe('when a symlink is involved', () => {
    it('refuses a symlink to a file outside the workspace', async () => {
      await symlink(path.join(base, 'secret.txt'), path.join(ws, 'link.txt'));
      await expect(resolveInWorkspace(ws, 'link.txt')).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/escapes the session workspace \(through a symlink\)/),
      });
    });

    it('refuses a path under a symlinked directory pointing outside, even when the file does not exist', async () => {
      await symlink(base, path.join(ws, 'out'));
      await expect(resolveInWorkspace(ws, 'out/new-file.txt')).rejects.toMatchObject({
        message: expect.stringMatching(/escapes/),
      });
    });

    it('refuses a dangling symlink whose target would be created outside the workspace', async () => {
      await symlink(path.join(base, 'not-yet.txt'), path.join(ws, 'dangling'));
      await expect(resolveInWorkspace(ws, 'dangling')).rejects.toMatchObject({
        message: expect.stringMatching(/escapes/),
      });
    });

    it('follows a symlink that stays inside the workspace', async () => {
      await symlink('sub', path.join(ws, 'inner'));
      await expect(resolveInWorkspace(ws, 'inner/f.txt')).resolves.toBe(path.join(ws, 'sub/f.txt'));
    });

    it('refuses a symlink loop with a message naming the loop', async () => {
      await symlink('loop2', path.join(ws, 'loop1'));
      await symlink('loop1', path.join(ws, 'loop2'));
      await expect(resolveInWorkspace(ws, 'loop1/x')).rejects.toMatchObject({
        message: expect.stringMatching(/symlink loop/),
      });
    });

    it('accepts a workspace that is itself reached through a symlink', async () => {
      const alias = path.join(base, 'alias');
      await symlink(ws, alias);
      await expect(resolveInWorkspace(alias, 'a.txt')).resolves.toBe(path.join(ws, 'a.txt'));
    });
  });
});
