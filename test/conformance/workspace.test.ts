import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Result, rt, uid } from './api.js';
import { describeModes, useService } from './fixture.js';

const escapeError = (r: Result) => {
  expect(r.status, JSON.stringify(r)).toBe('error');
  expect(r.error?.code).toBe('handler_error');
};

// API.md: a session's workspace is TD_WORKSPACE_ROOT/<tenant or "default">/<session>, created on
// PUT; paths are relative to it; absolute paths and escapes (.., symlinks) end error/handler_error.
describeModes('session workspaces', (mode) => {
  const f = useService(mode);
  const TOOLS = ['read_files', 'find_files', 'edit_file', 'run_command', 'write_todo'];

  describe('when a session is created', () => {
    it('creates TD_WORKSPACE_ROOT/default/<session> on PUT, before any call', async () => {
      const s = uid('ws');
      expect(existsSync(f.service.workspace(s))).toBe(false);
      await f.api.putSession(s, { provider: 'openai' });
      expect(statSync(f.service.workspace(s)).isDirectory()).toBe(true);
    });

    it('creates TD_WORKSPACE_ROOT/<tenant>/<session> for a session with a tenant', async () => {
      const s = uid('ws');
      await f.api.putSession(s, { provider: 'openai', tenant: 'acme' });
      expect(statSync(f.service.workspace(s, 'acme')).isDirectory()).toBe(true);
      expect(existsSync(f.service.workspace(s))).toBe(false);
    });

    it('keeps the files of a session when it is PUT again', async () => {
      const s = uid('ws');
      await f.api.putSession(s, { provider: 'openai' });
      writeFileSync(path.join(f.service.workspace(s), 'keep.txt'), 'kept');
      await f.api.putSession(s, { provider: 'anthropic' });
      expect(readFileSync(path.join(f.service.workspace(s), 'keep.txt'), 'utf8')).toBe('kept');
    });
  });

  describe('when tools touch files', () => {
    it('runs commands and edits files in the tenant workspace of the session', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', tenant: 'acme', autoApprove: 'all' });
      const ws = f.service.workspace(s, 'acme');
      const b = await f.api.round(s, uid('run'), [
        rt('edit_file', { path: 'sub/e.txt', content: 'edited' }),
        rt('run_command', { command: 'pwd; cat sub/e.txt' }),
        rt('write_todo', { items: [{ text: 'x' }] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
      expect(readFileSync(path.join(ws, 'sub/e.txt'), 'utf8')).toBe('edited');
      expect(b.results[1]?.output.stdout).toBe(`${ws}\nedited`);
    });

    it('keeps two sessions apart: a file of one is not found from the other', async () => {
      const a = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const b = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      await f.api.one(a, rt('edit_file', { path: 'mine.txt', content: 'a' }));
      const read = await f.api.one(b, rt('read_files', { paths: ['mine.txt'] }));
      expect(read.output.files[0]).toMatchObject({ content: null });
      const found = await f.api.one(b, rt('find_files', { pattern: '**/*' }));
      expect(found.output.paths).not.toContain('mine.txt');
    });
  });

  describe('when a path leaves the workspace', () => {
    it('refuses absolute paths in read_files, edit_file and find_files with error/handler_error', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const outside = path.join(f.service.root, `abs-${uid('x')}.txt`);
      const b = await f.api.round(s, uid('run'), [
        rt('read_files', { paths: ['/etc/hostname'] }),
        rt('edit_file', { path: outside, content: 'x' }),
        rt('find_files', { pattern: '/etc/*' }),
      ]);
      for (const r of b.results) {
        escapeError(r);
        expect(r.error?.message).toMatch(/absolute/);
      }
      expect(existsSync(outside)).toBe(false);
    });

    it('refuses `..` escapes with error/handler_error, and writes nothing outside', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const name = `dotdot-${uid('x')}.txt`;
      const b = await f.api.round(s, uid('run'), [
        rt('read_files', { paths: ['../../../../etc/hostname'] }),
        rt('edit_file', { path: `../${name}`, content: 'x' }),
        rt('edit_file', { path: `sub/../../${name}`, content: 'x' }),
        rt('find_files', { pattern: '../**' }),
        rt('read_files', { paths: ['ok.txt', '..'] }),
      ]);
      for (const r of b.results) {
        escapeError(r);
        expect(r.error?.message).toMatch(/escapes|\.\./);
      }
      expect(existsSync(path.join(f.service.root, 'default', name))).toBe(false);
      expect(existsSync(path.join(f.service.root, name))).toBe(false);
    });

    it('allows `..` that stays inside the workspace', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      writeFileSync(path.join(f.service.workspace(s), 'in.txt'), 'inside');
      const r = await f.api.one(s, rt('read_files', { paths: ['sub/../in.txt'] }));
      expect(r.status).toBe('ok');
      expect(r.output.files[0]).toMatchObject({ path: 'sub/../in.txt', content: 'inside' });
    });

    it('refuses reading and writing through a symlink that points outside, leaving the target untouched', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const ws = f.service.workspace(s);
      const secretDir = path.join(f.service.root, `secret-${uid('d')}`);
      mkdirSync(secretDir);
      writeFileSync(path.join(secretDir, 'secret.txt'), 'top secret');
      symlinkSync(path.join(secretDir, 'secret.txt'), path.join(ws, 'link.txt'));
      symlinkSync(secretDir, path.join(ws, 'linkdir'));
      symlinkSync(path.join(secretDir, 'not-yet.txt'), path.join(ws, 'dangling.txt'));
      const b = await f.api.round(s, uid('run'), [
        rt('read_files', { paths: ['link.txt'] }),
        rt('read_files', { paths: ['linkdir/secret.txt'] }),
        rt('edit_file', { path: 'link.txt', content: 'overwritten' }),
        rt('edit_file', { path: 'linkdir/new.txt', content: 'planted' }),
        rt('edit_file', { path: 'dangling.txt', content: 'planted' }),
        rt('edit_file', { path: 'link.txt', old: 'top', new: 'bottom' }),
      ]);
      for (const r of b.results) {
        escapeError(r);
        expect(r.error?.message).toMatch(/symlink|escapes/);
        expect(JSON.stringify(r)).not.toContain('top secret');
      }
      expect(readFileSync(path.join(secretDir, 'secret.txt'), 'utf8')).toBe('top secret');
      expect(existsSync(path.join(secretDir, 'new.txt'))).toBe(false);
      expect(existsSync(path.join(secretDir, 'not-yet.txt'))).toBe(false);
    });

    it('does not list files outside through a symlinked directory in find_files', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const ws = f.service.workspace(s);
      const outside = path.join(f.service.root, `out-${uid('d')}`);
      mkdirSync(outside);
      writeFileSync(path.join(outside, 'hidden.txt'), 'x');
      symlinkSync(outside, path.join(ws, 'out'));
      const r = await f.api.one(s, rt('find_files', { pattern: '**/*.txt' }));
      expect(r.status).toBe('ok');
      expect(r.output.paths).not.toContain('out/hidden.txt');
    });

    it('follows a symlink that stays inside the workspace', async () => {
      const s = await f.api.session(TOOLS, { provider: 'openai', autoApprove: 'all' });
      const ws = f.service.workspace(s);
      mkdirSync(path.join(ws, 'real'));
      writeFileSync(path.join(ws, 'real/t.txt'), 'through');
      symlinkSync(path.join(ws, 'real'), path.join(ws, 'alias'));
      const r = await f.api.one(s, rt('read_files', { paths: ['alias/t.txt'] }));
      expect(r.status).toBe('ok');
      expect(r.output.files[0]?.content).toBe('through');
    });
  });
});
