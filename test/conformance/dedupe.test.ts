import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileContent, httpBody, type Result, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

const FILE_TOOLS = ['read_files', 'find_files', 'edit_file', 'run_command', 'http_request', 'calculate'];

const expectFresh = (r: Result | undefined) => {
  expect(r?.status, JSON.stringify(r)).toBe('ok');
  expect(r?.dedupedFrom).toBeUndefined();
};

// DESIGN.md pass 1 step 3 (dedupe, per run), pass 3 (invalidation by edit_file and run_command)
// and step 7 (the tenant-scoped result cache).
describeModes('dedupe and the result cache', (mode) => {
  const f = useService(mode);
  const session = (body: Record<string, unknown> = {}) =>
    f.api.session(FILE_TOOLS.concat('fetch_page', 'search_web'), { provider: 'openai', autoApprove: 'all', ...body });
  const write = (s: string, rel: string, content: string) =>
    writeFileSync(path.join(f.service.workspace(s), rel), content);
  const read = (s: string, rel: string) => readFileSync(path.join(f.service.workspace(s), rel), 'utf8');

  describe('when a call repeats a successful one in the same run', () => {
    it('runs two identical calls of one round once: the second is deduped from the first', async () => {
      const s = await session();
      const tag = tagOf('pair');
      const url = f.target.url('slow', tag, 0, { ms: '50' });
      const b = await f.api.round(s, uid('run'), [rt('http_request', { url }), rt('http_request', { url })]);
      const [a, c] = b.results;
      expect(a?.status).toBe('ok');
      expect(c).toMatchObject({ status: 'deduped', dedupedFrom: a?.id, output: a?.output });
      expect(typeof c?.durationMs).toBe('number');
      expect(f.target.tag(tag).hits).toBe(1);
    });

    it('answers a repeat in a later round of the run as deduped, naming the original call and round', async () => {
      const s = await session();
      write(s, 'a.txt', 'v1');
      const run = uid('run');
      const first = await f.api.round(s, run, [rt('read_files', { paths: ['a.txt'] })]);
      write(s, 'a.txt', 'changed behind its back');
      const again = (await f.api.round(s, run, [rt('read_files', { paths: ['a.txt'] })])).results[0];
      expect(again).toMatchObject({
        status: 'deduped',
        dedupedFrom: first.results[0]?.id,
        dedupedFromRound: first.round,
      });
      expect(fileContent(again as Result, 'a.txt')).toBe('v1');
    });

    it('compares args as canonical JSON: key order does not matter', async () => {
      const s = await session();
      const tag = tagOf('canon');
      const url = f.target.url('echo', tag);
      const b = await f.api.round(s, uid('run'), [
        rt('http_request', { url, method: 'GET', headers: { a: '1', b: '2' } }),
        rt('http_request', { headers: { b: '2', a: '1' }, method: 'GET', url }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'deduped']);
      expect(f.target.tag(tag).hits).toBe(1);
    });

    it('scopes dedupe to the run: another run of the session runs the call again', async () => {
      const s = await session();
      write(s, 'a.txt', 'v1');
      const run1 = uid('run');
      expectFresh(await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run1));
      write(s, 'a.txt', 'v2');
      const other = await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), uid('run'));
      expectFresh(other);
      expect(fileContent(other, 'a.txt')).toBe('v2');
      const back = await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run1);
      expect(back.status).toBe('deduped');
      expect(fileContent(back, 'a.txt')).toBe('v1');
    });
  });

  describe('when the earlier call failed', () => {
    it('runs a repeat of a failed call again in a later round', async () => {
      const s = await session();
      const tag = tagOf('fail');
      const url = f.target.url('reset', tag);
      const run = uid('run');
      const one = await f.api.one(s, rt('http_request', { url }), run);
      const two = await f.api.one(s, rt('http_request', { url }), run);
      for (const r of [one, two]) expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(two.dedupedFrom).toBeUndefined();
      expect(f.target.tag(tag).hits).toBe(2);
    });

    it('gives the second of two identical failing calls in one round the first one’s status and error, running once', async () => {
      const s = await session();
      const tag = tagOf('failpair');
      const url = f.target.url('reset', tag);
      const b = await f.api.round(s, uid('run'), [rt('http_request', { url }), rt('http_request', { url })]);
      const [a, c] = b.results;
      expect(a).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(c).toMatchObject({ status: 'error', error: a?.error });
      expect(f.target.tag(tag).hits).toBe(1);
    });
  });

  describe('calls meant as a new side effect each time are never deduped', () => {
    it('runs identical run_command calls every time, in a round and across rounds', async () => {
      const s = await session();
      const run = uid('run');
      const cmd = { command: 'echo x >> log.txt' };
      const b = await f.api.round(s, run, [rt('run_command', cmd), rt('run_command', cmd)]);
      const c = await f.api.round(s, run, [rt('run_command', cmd)]);
      for (const r of [...b.results, ...c.results]) expectFresh(r);
      expect(read(s, 'log.txt')).toBe('x\nx\nx\n');
    });

    it('runs identical edit_file calls every time, in a round and across rounds', async () => {
      const s = await session();
      write(s, 'e.txt', 'aXb');
      const run = uid('run');
      const replace = { path: 'e.txt', old: 'X', new: 'Y' };
      const b = await f.api.round(s, run, [rt('edit_file', replace), rt('edit_file', replace)]);
      expectFresh(b.results[0]);
      // The repeat ran (and found no X left), instead of repeating the first one's answer.
      expect(b.results[1]).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      const whole = { path: 'e.txt', content: 'whole' };
      expectFresh(await f.api.one(s, rt('edit_file', whole), run));
      write(s, 'e.txt', 'changed');
      expectFresh(await f.api.one(s, rt('edit_file', whole), run));
      expect(read(s, 'e.txt')).toBe('whole');
    });

    it('sends identical non-GET http_request calls every time (POST, PUT, PATCH, DELETE, lower case)', async () => {
      const s = await session();
      const tag = tagOf('post');
      const run = uid('run');
      const calls = (n: number) =>
        ['POST', 'POST', 'post', 'PUT', 'PATCH', 'DELETE', 'DELETE'].map((method) =>
          rt('http_request', {
            url: f.target.url('echo', tag, n),
            method,
            ...(method === 'DELETE' ? {} : { body: 'b' }),
          }),
        );
      const b = await f.api.round(s, run, calls(0));
      const c = await f.api.round(s, run, calls(0));
      for (const r of [...b.results, ...c.results]) expectFresh(r);
      expect(f.target.tag(tag).hits).toBe(14);
      // …and never cached either.
      const other = await f.api.round(s, uid('run'), calls(0).slice(0, 1));
      expectFresh(other.results[0]);
      expect(f.target.tag(tag).hits).toBe(15);
    });
  });

  describe('when edit_file changes a file', () => {
    it('drops the run’s read_files entries for that path, whatever its spelling', async () => {
      const s = await session();
      const run = uid('run');
      const spellings: Array<[string, string]> = [
        ['./a.txt', 'a.txt'],
        ['b/../a.txt', './a.txt'],
        ['a.txt', 'x/../a.txt'],
        ['.//a.txt', 'a.txt'],
      ];
      for (const [i, [editPath, readPath]] of spellings.entries()) {
        const before = await f.api.one(s, rt('read_files', { paths: [readPath] }), run);
        expect(before.status).toMatch(/ok|deduped/);
        const edit = await f.api.one(s, rt('edit_file', { path: editPath, content: `v${i}` }), run);
        expect(edit.status, JSON.stringify(edit)).toBe('ok');
        const after = await f.api.one(s, rt('read_files', { paths: [readPath] }), run);
        expectFresh(after);
        expect(fileContent(after, readPath)).toBe(`v${i}`);
      }
    });

    it('drops an entry that read several paths when one of them is edited, and also after a replace', async () => {
      const s = await session();
      write(s, 'a.txt', 'A');
      write(s, 'c.txt', 'C1');
      const run = uid('run');
      const paths = { paths: ['a.txt', 'c.txt'] };
      expectFresh(await f.api.one(s, rt('read_files', paths), run));
      expect((await f.api.one(s, rt('edit_file', { path: 'c.txt', old: 'C1', new: 'C2' }), run)).status).toBe('ok');
      const after = await f.api.one(s, rt('read_files', paths), run);
      expectFresh(after);
      expect(fileContent(after, 'c.txt')).toBe('C2');
    });

    it('keeps the entries of other paths (they stay deduped)', async () => {
      const s = await session();
      write(s, 'a.txt', 'A');
      const run = uid('run');
      expectFresh(await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run));
      await f.api.one(s, rt('edit_file', { path: 'other.txt', content: 'o' }), run);
      expect((await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run)).status).toBe('deduped');
    });

    it('keeps the entries when the edit failed', async () => {
      const s = await session();
      write(s, 'a.txt', 'A');
      const run = uid('run');
      expectFresh(await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run));
      const failed = await f.api.one(s, rt('edit_file', { path: 'a.txt', old: 'missing', new: 'x' }), run);
      expect(failed.status).toBe('error');
      expect((await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run)).status).toBe('deduped');
    });

    it('reads the new content when read, edit and read come in one round', async () => {
      const s = await session();
      write(s, 'a.txt', 'old');
      const b = await f.api.round(s, uid('run'), [
        rt('read_files', { paths: ['a.txt'] }),
        rt('edit_file', { path: './a.txt', content: 'new' }),
        rt('read_files', { paths: ['a.txt'] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
      expect(fileContent(b.results[0] as Result, 'a.txt')).toBe('old');
      expect(fileContent(b.results[2] as Result, 'a.txt')).toBe('new');
    });

    it('drops find_files entries when it created the file, and keeps them when the file existed', async () => {
      const s = await session();
      write(s, 'a.txt', 'A');
      const run = uid('run');
      const find = rt('find_files', { pattern: '*.txt' });
      expect((await f.api.one(s, find, run)).output.paths).toEqual(['a.txt']);
      await f.api.one(s, rt('edit_file', { path: 'a.txt', content: 'A2' }), run);
      expect((await f.api.one(s, rt('find_files', { pattern: '*.txt' }), run)).status).toBe('deduped');
      await f.api.one(s, rt('edit_file', { path: 'b.txt', content: 'B' }), run);
      const after = await f.api.one(s, rt('find_files', { pattern: '*.txt' }), run);
      expectFresh(after);
      expect(after.output.paths).toEqual(['a.txt', 'b.txt']);
    });
  });

  describe('when run_command ran', () => {
    it('drops every read_files and find_files entry of the run', async () => {
      const s = await session();
      write(s, 'a.txt', 'v1');
      const run = uid('run');
      expectFresh(await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run));
      expectFresh(await f.api.one(s, rt('find_files', { pattern: '*' }), run));
      const cmd = await f.api.one(s, rt('run_command', { command: 'printf v2 > a.txt; touch z.txt' }), run);
      expect(cmd.status).toBe('ok');
      const b = await f.api.round(s, run, [rt('read_files', { paths: ['a.txt'] }), rt('find_files', { pattern: '*' })]);
      for (const r of b.results) expectFresh(r);
      expect(fileContent(b.results[0] as Result, 'a.txt')).toBe('v2');
      expect(b.results[1]?.output.paths).toEqual(['a.txt', 'z.txt']);
    });

    it('drops them even for a command that exits non-zero (still ok) and within the same round', async () => {
      const s = await session();
      write(s, 'a.txt', 'v1');
      const run = uid('run');
      const b = await f.api.round(s, run, [
        rt('read_files', { paths: ['a.txt'] }),
        rt('run_command', { command: 'printf v2 > a.txt; exit 1' }),
        rt('read_files', { paths: ['a.txt'] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
      expect(b.results[1]?.output.exitCode).toBe(1);
      expect(fileContent(b.results[2] as Result, 'a.txt')).toBe('v2');
    });

    it('drops them for a command stopped at its deadline too, which may have written before it was killed', async () => {
      const s = await session();
      write(s, 'a.txt', 'v1');
      const run = uid('run');
      expectFresh(await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run));
      const cmd = await f.api.one(
        s,
        rt('run_command', { command: 'printf v2 > a.txt; sleep 30', timeoutMs: 500 }),
        run,
      );
      expect(cmd.error?.code, JSON.stringify(cmd)).toBe('timeout');
      const again = await f.api.one(s, rt('read_files', { paths: ['a.txt'] }), run);
      expectFresh(again);
      expect(fileContent(again, 'a.txt')).toBe('v2');
    });

    it('keeps the entries of other tools (calculate, GET http_request) deduped', async () => {
      const s = await session();
      const tag = tagOf('keep');
      const run = uid('run');
      const calls = () => [
        rt('calculate', { expression: '6*7' }),
        rt('http_request', { url: f.target.url('echo', tag) }),
      ];
      await f.api.round(s, run, calls());
      await f.api.one(s, rt('run_command', { command: 'true' }), run);
      const again = await f.api.round(s, run, calls());
      expect(again.results.map((r) => r.status)).toEqual(['deduped', 'deduped']);
      expect(f.target.tag(tag).hits).toBe(1);
    });
  });

  describe('the 30-minute result cache', () => {
    it('answers fetch_page, search_web and GET http_request from the cache in another run, without running', async () => {
      const s = await session();
      const tag = tagOf('cache');
      const query = uid('cached query');
      const calls = () => [
        rt('http_request', { url: f.target.url('echo', tag, 0) }),
        rt('fetch_page', { url: f.target.url('page', tag, 1) }),
        rt('search_web', { query }),
      ];
      const first = await f.api.round(s, uid('run'), calls());
      expect(first.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
      const hits = f.target.requests.length;
      const second = await f.api.round(s, uid('run'), calls());
      expect(second.results.map((r) => r.status)).toEqual(['cached', 'cached', 'cached']);
      second.results.forEach((r, i) => {
        expect(r.output).toEqual(first.results[i]?.output);
        expect(r.error).toBeUndefined();
      });
      expect(f.target.requests.length).toBe(hits);
    });

    it('gives the second of two identical calls in one round the first one’s status when that is cached', async () => {
      const s = await session();
      const tag = tagOf('cached-twin');
      const call = () => rt('http_request', { url: f.target.url('echo', tag) });
      expect((await f.api.one(s, call(), uid('run'))).status).toBe('ok');
      const b = await f.api.round(s, uid('run'), [call(), call()]);
      expect(b.results.map((r) => r.status)).toEqual(['cached', 'cached']);
      expect(b.results[1]?.dedupedFrom).toBeUndefined();
      expect(b.results[1]?.output).toEqual(b.results[0]?.output);
      expect(f.target.tag(tag).hits).toBe(1);
    });

    it('shares the cache between sessions of one tenant, never between tenants', async () => {
      const tenant = uid('tenant');
      const a = await session({ tenant });
      const b = await session({ tenant });
      const other = await session({ tenant: uid('tenant') });
      const tag = tagOf('tenant');
      const call = () => rt('http_request', { url: f.target.url('echo', tag) });
      expect((await f.api.one(a, call())).status).toBe('ok');
      expect((await f.api.one(b, call())).status).toBe('cached');
      expect((await f.api.one(other, call())).status).toBe('ok');
      expect(f.target.tag(tag).hits).toBe(2);
    });

    it('never caches requests carrying credentials', async () => {
      const s = await session();
      const tag = tagOf('creds');
      const url = (n: number) => f.target.url('echo', tag, n);
      const credentialed = [
        { url: url(0), headers: { Authorization: 'Bearer x' } },
        { url: url(1), headers: { 'proxy-authorization': 'Basic eA==' } },
        { url: url(2), headers: { Cookie: 'sid=1' } },
        { url: url(3), headers: { 'X-API-Key': 'k' } },
        { url: url(4), headers: { 'X-Session-Token': 't' } },
        { url: url(5), headers: { 'x-client-secret': 's' } },
        { url: url(6), headers: { 'X-Auth-User': 'u' } },
        { url: url(7).replace('http://', 'http://user:pw@') },
      ];
      for (const run of [uid('run'), uid('run')]) {
        const b = await f.api.round(
          s,
          run,
          credentialed.map((args) => rt('http_request', args)),
        );
        b.results.forEach((r, i) => {
          expect(r.status, `${JSON.stringify(credentialed[i])}: ${r.status}`).toBe('ok');
        });
      }
      expect(f.target.tag(tag).hits).toBe(16);
      expect(httpBody((await f.api.one(s, rt('http_request', credentialed[0]))) as Result).headers.authorization).toBe(
        'Bearer x',
      );
    });

    it('does not cache failures', async () => {
      const s = await session();
      const tag = tagOf('nocache');
      const call = () => rt('http_request', { url: f.target.url('reset', tag) });
      expect((await f.api.one(s, call())).status).toBe('error');
      expect((await f.api.one(s, call())).status).toBe('error');
      expect(f.target.tag(tag).hits).toBe(2);
    });
  });
});
