import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Call, fileContent, type Result, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

// API.md v1.1 built-ins: file_history and error_history (answered from the session's recorded
// results), download_file (a GET into the workspace), in both modes against the real processes.
describeModes('history built-ins and download_file', (mode) => {
  const f = useService(mode);
  const TOOLS = [
    'read_files',
    'find_files',
    'edit_file',
    'run_command',
    'calculate',
    'file_history',
    'error_history',
    'download_file',
  ];
  const session = (body: Record<string, unknown> = { provider: 'openai', autoApprove: 'all' }) =>
    f.api.session(TOOLS, body);
  const write = (s: string, rel: string, content: string) => {
    const file = path.join(f.service.workspace(s), rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  };
  const entriesOf = (r: Result) => (r.output as { entries: Array<Record<string, unknown>> }).entries;
  const round = async (s: string, run: string, calls: Call[]) => (await f.api.round(s, run, calls)).results;

  describe('file_history', () => {
    it('lists what the session did to a path, newest first, with commands flagged mayHaveTouched', async () => {
      const s = await session();
      write(s, 'a.txt', 'one');
      const run = uid('run');
      const [read] = await round(s, run, [rt('read_files', { paths: ['./a.txt', 'b.txt'] })]);
      const [edit] = await round(s, run, [rt('edit_file', { path: 'x/../a.txt', old: 'one', new: 'two' })]);
      const [other] = await round(s, run, [rt('edit_file', { path: 'c.txt', content: 'c' })]);
      const [cmd] = await round(s, run, [rt('run_command', { command: 'exit 3' })]);
      const [history] = await round(s, uid('run'), [rt('file_history', { path: 'a.txt' })]);
      expect(history?.status, JSON.stringify(history)).toBe('ok');
      expect(history?.ranOn).toBe('coordinator');
      const entries = entriesOf(history as Result);
      expect(entries.map((e) => e.id)).toEqual([cmd?.id, edit?.id, read?.id]);
      expect(entries.map((e) => e.id)).not.toContain(other?.id);
      expect(entries[0]).toMatchObject({ name: 'run_command', status: 'ok', mayHaveTouched: true, exitCode: 3 });
      expect(entries[1]).toMatchObject({ name: 'edit_file', status: 'ok', run, round: expect.any(String) });
      expect(entries[2]).toMatchObject({ name: 'read_files', status: 'ok', at: expect.any(String) });
      expect(JSON.stringify(entries)).not.toContain('"content"');
    });

    it('lists a denied edit and an invalid one of the path with their errors', async () => {
      const s = await session({ provider: 'openai' });
      const run = uid('run');
      const pending = f.api.round(s, run, [rt('edit_file', { path: 'a.txt', content: 'x' })]);
      const [asked] = await f.api.waitPending(s, 1);
      await f.api.answer(s, asked?.confirmationId as string, { approve: false });
      const [denied] = (await pending).results;
      expect(denied?.status).toBe('denied');
      const [invalid] = await round(s, run, [rt('edit_file', { path: 'a.txt' })]);
      expect(invalid?.status).toBe('invalid');
      const [history] = await round(s, run, [rt('file_history', { path: 'a.txt' })]);
      expect(entriesOf(history as Result)).toEqual([
        expect.objectContaining({
          id: invalid?.id,
          status: 'invalid',
          error: expect.objectContaining({ code: 'invalid' }),
        }),
        expect.objectContaining({
          id: denied?.id,
          status: 'denied',
          error: expect.objectContaining({ code: 'denied' }),
        }),
      ]);
    });

    it('is deduped within a run until an edit of the path, after which a repeat is fresh', async () => {
      const s = await session();
      write(s, 'a.txt', 'one');
      const run = uid('run');
      const [first] = await round(s, run, [rt('file_history', { path: 'a.txt' })]);
      const [again] = await round(s, run, [rt('file_history', { path: 'a.txt' })]);
      expect(again).toMatchObject({ status: 'deduped', dedupedFrom: first?.id });
      const [edit] = await round(s, run, [rt('edit_file', { path: 'a.txt', content: 'two' })]);
      const [fresh] = await round(s, run, [rt('file_history', { path: 'a.txt' })]);
      expect(fresh?.status).toBe('ok');
      expect(entriesOf(fresh as Result)[0]).toMatchObject({ id: edit?.id, name: 'edit_file' });
    });

    it('validates its limit (1 to 100) and needs a path', async () => {
      const s = await session();
      const run = uid('run');
      const results = await round(s, run, [
        rt('file_history', { path: 'a.txt', limit: 0 }),
        rt('file_history', { path: 'a.txt', limit: 101 }),
        rt('file_history', { path: 'a.txt', limit: 'ten' }),
        rt('file_history', {}),
        rt('error_history', { limit: 101 }),
      ]);
      for (const r of results) expect(r.status, JSON.stringify(r)).toBe('invalid');
      expect(results[0]?.error?.message).toMatch(/limit/);
      expect(results[3]?.error?.message).toMatch(/path/);
    });

    it('refuses an absolute path, or one that leaves the workspace, with error/handler_error saying so', async () => {
      const s = await session();
      const results = await round(s, uid('run'), [
        rt('file_history', { path: '/etc/passwd' }),
        rt('file_history', { path: '../a.txt' }),
        rt('file_history', { path: 'sub/../../a.txt' }),
        rt('file_history', { path: 'sub/../a.txt' }),
      ]);
      for (const r of results.slice(0, 3)) {
        expect(r.status, JSON.stringify(r)).toBe('error');
        expect(r.error?.code).toBe('handler_error');
      }
      expect(results[0]?.error?.message).toMatch(/absolute/);
      expect(results[1]?.error?.message).toMatch(/escapes the session workspace/);
      expect(results[3]?.status).toBe('ok');
    });

    it('gives at most `limit` entries, the newest', async () => {
      const s = await session();
      const run = uid('run');
      const reads = await round(
        s,
        run,
        Array.from({ length: 4 }, (_, i) => rt('read_files', { paths: ['a.txt', `n${i}`] })),
      );
      const [history] = await round(s, uid('run'), [rt('file_history', { path: 'a.txt', limit: 2 })]);
      expect(entriesOf(history as Result).map((e) => e.id)).toEqual([reads[3]?.id, reads[2]?.id]);
    });
  });

  describe('error_history', () => {
    it('lists the results that did not succeed, newest first, of one tool when given', async () => {
      const s = await session();
      const run = uid('run');
      const [ok, invalid, unknown] = await round(s, run, [
        rt('calculate', { expression: '1+1' }),
        rt('calculate', { expression: 5 }),
        rt('no_such_tool', {}),
      ]);
      expect([ok?.status, invalid?.status, unknown?.status]).toEqual(['ok', 'invalid', 'unknown']);
      const [all, calcs] = await round(s, uid('run'), [
        rt('error_history', {}),
        rt('error_history', { tool: 'calculate' }),
      ]);
      const listed = entriesOf(all as Result);
      expect(listed.map((e) => e.id)).toEqual([unknown?.id, invalid?.id]);
      expect(listed[1]).toEqual({
        round: expect.any(String),
        run,
        at: expect.any(String),
        id: invalid?.id,
        name: 'calculate',
        status: 'invalid',
        error: invalid?.error,
      });
      expect(entriesOf(calcs as Result).map((e) => e.id)).toEqual([invalid?.id]);
    });

    it('is deduped within a run until a new failure, after which a repeat sees it', async () => {
      const s = await session();
      const run = uid('run');
      const [first] = await round(s, run, [rt('error_history', {})]);
      expect(entriesOf(first as Result)).toEqual([]);
      const [again] = await round(s, run, [rt('error_history', {})]);
      expect(again).toMatchObject({ status: 'deduped', dedupedFrom: first?.id });
      const [failed] = await round(s, run, [rt('calculate', { expression: '1/' })]);
      expect(failed?.status).not.toBe('ok');
      const [fresh] = await round(s, run, [rt('error_history', {})]);
      expect(fresh?.status).toBe('ok');
      expect(entriesOf(fresh as Result).map((e) => e.id)).toEqual([failed?.id]);
    });
  });

  describe('download_file', () => {
    it('writes the body to the workspace path and answers {path, bytes, contentType}', async () => {
      const s = await session();
      const r = await f.api.one(
        s,
        rt('download_file', { url: f.target.url('page', tagOf('dl')), path: 'docs/page.html' }),
      );
      expect(r.status, JSON.stringify(r)).toBe('ok');
      const written = readFileSync(path.join(f.service.workspace(s), 'docs/page.html'), 'utf8');
      expect(r.output).toMatchObject({
        path: 'docs/page.html',
        bytes: Buffer.byteLength(written),
        contentType: 'text/html; charset=utf-8',
      });
      expect(written).toContain('Marker');
    });

    it('fails a download over 64 MiB and writes nothing, leaving no partial file', async () => {
      const s = await session();
      const url = f.target.url('big', tagOf('big'), 0, { bytes: String(64 * 1024 * 1024 + 1) });
      const r = await f.api.one(s, rt('download_file', { url, path: 'big.bin' }));
      expect(r.status, JSON.stringify(r)).toBe('error');
      expect(r.error).toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/64 MiB|67108864|cap|large/i),
      });
      expect(existsSync(path.join(f.service.workspace(s), 'big.bin'))).toBe(false);
      expect(readdirSync(f.service.workspace(s))).toEqual([]);
    });

    it('refuses a redirect to a private address outside TD_HTTP_ALLOW without connecting to it', async () => {
      const s = await session();
      const tag = tagOf('dl-redirect');
      const to = `http://127.0.0.1:${f.canary.port}/echo/${tag}/1`;
      const r = await f.api.one(
        s,
        rt('download_file', { url: f.target.url('redirect', tag, 0, { to }), path: 'x.txt' }),
      );
      expect(r.status, JSON.stringify(r)).toBe('error');
      expect(r.error?.message).toMatch(/private|loopback|not public|refused/i);
      expect(f.canary.requests.filter((q) => q.tag === tag)).toEqual([]);
      expect(existsSync(path.join(f.service.workspace(s), 'x.txt'))).toBe(false);
    });

    it('makes a later read of the path it wrote run again instead of being deduped', async () => {
      const s = await session();
      write(s, 'notes.txt', 'old');
      const run = uid('run');
      const [before] = await round(s, run, [rt('read_files', { paths: ['notes.txt'] })]);
      expect(fileContent(before as Result, 'notes.txt')).toBe('old');
      const [download] = await round(s, run, [
        rt('download_file', { url: f.target.url('echo', tagOf('dl-read')), path: './notes.txt' }),
      ]);
      expect(download?.status, JSON.stringify(download)).toBe('ok');
      const [after] = await round(s, run, [rt('read_files', { paths: ['notes.txt'] })]);
      expect(after?.status).toBe('ok');
      expect(String(fileContent(after as Result, 'notes.txt'))).toContain('"method":"GET"');
    });

    it('keeps no dedupe entry of a read or find_files that ran beside it in its batch, whichever came first', async () => {
      const s = await session();
      write(s, 'notes.txt', 'old');
      write(s, 'x.txt', 'x');
      const run = uid('run');
      // The download waits 300 ms for its body: the reads beside it read before it wrote.
      const download = rt('download_file', {
        url: f.target.url('slow', tagOf('dl-beside'), 0, { ms: '300' }),
        path: 'notes.txt',
      });
      const created = rt('download_file', {
        url: f.target.url('slow', tagOf('dl-new'), 0, { ms: '300' }),
        path: 'new.txt',
      });
      const beside = await round(s, run, [
        rt('read_files', { paths: ['notes.txt'] }),
        download,
        created,
        rt('read_files', { paths: ['./notes.txt', 'x.txt'] }),
        rt('find_files', { pattern: '*.txt' }),
      ]);
      expect(beside.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
      expect(fileContent(beside[3] as Result, './notes.txt')).toBe('old');
      const after = await round(s, run, [
        rt('read_files', { paths: ['notes.txt'] }),
        rt('read_files', { paths: ['./notes.txt', 'x.txt'] }),
        rt('find_files', { pattern: '*.txt' }),
      ]);
      expect(after.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
      expect(String(fileContent(after[0] as Result, 'notes.txt'))).toContain('"id"');
      expect((after[2] as Result).output.paths).toContain('new.txt');
    });

    it('is listed by file_history of the path it wrote', async () => {
      const s = await session();
      const [download] = await round(s, uid('run'), [
        rt('download_file', { url: f.target.url('echo', tagOf('dl-h')), path: 'e.json' }),
      ]);
      const [history] = await round(s, uid('run'), [rt('file_history', { path: 'e.json' })]);
      expect(entriesOf(history as Result)).toEqual([
        expect.objectContaining({
          id: download?.id,
          name: 'download_file',
          status: 'ok',
          contentType: 'application/json',
        }),
      ]);
    });
  });
});
