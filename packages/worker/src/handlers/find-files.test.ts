import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { findFiles, MAX_FOUND_PATHS } from './find-files.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let root: string;
beforeEach(async () => {
  ws = await makeWorkspace();
  root = path.join(ws.dir, 'w');
  for (const f of ['src/b.ts', 'src/a.ts', 'src/deep/c.ts', 'README.md', 'node_modules/x/i.ts', '.git/HEAD']) {
    await mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await writeFile(path.join(root, f), '');
  }
  await mkdir(path.join(ws.dir, 'outside'));
  await writeFile(path.join(ws.dir, 'outside/secret.ts'), '');
});
afterEach(() => ws.cleanup());

const ctx = () => makeContext(root);

describe('find_files', () => {
  it('returns matching paths, relative and sorted', async () => {
    await expect(findFiles({ pattern: '**/*.ts' }, ctx())).resolves.toEqual({
      paths: ['src/a.ts', 'src/b.ts', 'src/deep/c.ts'],
    });
  });

  it('skips node_modules and .git', async () => {
    const out = await findFiles({ pattern: '**/*' }, ctx());
    expect(out.paths).toEqual(['README.md', 'src/a.ts', 'src/b.ts', 'src/deep/c.ts']);
  });

  it('does not follow a symlinked directory out of the workspace', async () => {
    await symlink(path.join(ws.dir, 'outside'), path.join(root, 'out'));
    const out = await findFiles({ pattern: '**/*.ts' }, ctx());
    expect(out.paths).not.toContain('out/secret.ts');
  });

  describe('when a symlink points out of the workspace', () => {
    beforeEach(async () => {
      // Another session's workspace beside this one, as under TD_WORKSPACE_ROOT.
      await mkdir(path.join(ws.dir, 'other-session/src'), { recursive: true });
      await writeFile(path.join(ws.dir, 'other-session/src/private.ts'), '');
      await symlink('..', path.join(root, 'up'));
      await symlink(path.join(ws.dir, 'other-session'), path.join(root, 'neighbour'));
    });

    it.each(['up/*/*', 'up/**/*', 'up/other-session/src/*', 'up/*', 'neighbour/src/*', 'neighbour/**', '{up,src}/*/*'])(
      'lists nothing through it (%s)',
      async (pattern) => {
        const out = await findFiles({ pattern }, ctx());
        expect(out.paths.filter((p) => p.startsWith('up/') || p.startsWith('neighbour/'))).toEqual([]);
      },
    );

    it('still lists what matches inside the workspace beside it', async () => {
      await expect(findFiles({ pattern: '{up,src}/*.ts' }, ctx())).resolves.toEqual({
        paths: ['src/a.ts', 'src/b.ts'],
      });
    });
  });

  it('lists through a symlinked directory that stays inside the workspace when the pattern names it', async () => {
    await symlink('src', path.join(root, 'alias'));
    await expect(findFiles({ pattern: 'alias/*.ts' }, ctx())).resolves.toEqual({
      paths: ['alias/a.ts', 'alias/b.ts'],
    });
  });

  it('refuses a pattern with "..", naming the escape', async () => {
    await expect(findFiles({ pattern: '../outside/*.ts' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/escapes the session workspace/),
    });
    await expect(findFiles({ pattern: '{..,src}/*.ts' }, ctx())).rejects.toMatchObject({ code: 'handler_error' });
  });

  it('refuses an absolute pattern, saying it is absolute', async () => {
    await expect(findFiles({ pattern: '/etc/*' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/is absolute/),
    });
  });

  it(`caps the list at ${MAX_FOUND_PATHS} paths and flags it truncated`, async () => {
    await mkdir(path.join(root, 'many'));
    await Promise.all(
      Array.from({ length: MAX_FOUND_PATHS + 5 }, (_, i) => writeFile(path.join(root, `many/${i}.txt`), '')),
    );
    const out = await findFiles({ pattern: 'many/*.txt' }, ctx());
    expect(out.paths).toHaveLength(MAX_FOUND_PATHS);
    expect(out.truncated).toBe(true);
  });
});
