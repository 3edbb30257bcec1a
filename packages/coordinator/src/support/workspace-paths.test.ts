import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { realWorkspacePath } from './workspace-paths.js';

describe('realWorkspacePath', () => {
  const outside = mkdtempSync(path.join(tmpdir(), 'td-outside-'));
  const ws = mkdtempSync(path.join(tmpdir(), 'td-ws-'));
  mkdirSync(path.join(ws, 'd'));
  writeFileSync(path.join(ws, 'd', 'a.txt'), 'a');
  symlinkSync(path.join('d', 'a.txt'), path.join(ws, 'link.txt'));
  symlinkSync('d', path.join(ws, 'dir-link'));
  symlinkSync(path.join('d', 'new.txt'), path.join(ws, 'dangling.txt'));
  symlinkSync(outside, path.join(ws, 'out'));
  symlinkSync('loop-b', path.join(ws, 'loop-a'));
  symlinkSync('loop-a', path.join(ws, 'loop-b'));

  it('gives the target of a link, of a linked directory, and of a dangling link inside the workspace', async () => {
    expect(await realWorkspacePath(ws, 'link.txt')).toBe('d/a.txt');
    expect(await realWorkspacePath(ws, 'dir-link/a.txt')).toBe('d/a.txt');
    expect(await realWorkspacePath(ws, 'dangling.txt')).toBe('d/new.txt');
    expect(await realWorkspacePath(ws, 'd/a.txt')).toBe('d/a.txt');
    expect(await realWorkspacePath(ws, 'dir-link/not-yet/b.txt')).toBe('d/not-yet/b.txt');
  });

  it('gives nothing for a path that leaves the workspace, loops, or a workspace that is gone', async () => {
    expect(await realWorkspacePath(ws, 'out/x.txt')).toBeUndefined();
    expect(await realWorkspacePath(ws, '../x.txt')).toBeUndefined();
    expect(await realWorkspacePath(ws, 'loop-a')).toBeUndefined();
    expect(await realWorkspacePath(path.join(ws, 'missing'), 'a.txt')).toBeUndefined();
  });
});
