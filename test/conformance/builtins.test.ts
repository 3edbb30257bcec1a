import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { direct, fileContent, httpBody, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';
import { markedSeconds, pidsWithArg, sleep } from './service.js';

// API.md "Built-in tools": each handler's args and output, against the real processes.
describeModes('built-in tools', (mode) => {
  // TD_SEARCH_URL spells the target's host `localhost`, which TD_HTTP_ALLOW (127.0.0.1:<port>) does
  // not list: the operator's search endpoint is not subject to the allow list.
  const f = useService(mode, { envFor: ({ target }) => ({ TD_SEARCH_URL: `http://localhost:${target.port}/searx` }) });
  const ALL = ['read_files', 'find_files', 'edit_file', 'run_command', 'http_request', 'fetch_page', 'search_web'];
  const more = ['calculate', 'write_todo'];
  const session = () => f.api.session([...ALL, ...more], { provider: 'openai', autoApprove: 'all' });
  const write = (s: string, rel: string, content: string) => {
    const file = path.join(f.service.workspace(s), rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  };

  describe('read_files', () => {
    it('returns {files: [{path, content}]} for every path, in order, with the path as given', async () => {
      const s = await session();
      write(s, 'a.txt', 'alpha');
      write(s, 'dir/b.txt', 'beta\nline 2');
      const r = await f.api.one(s, rt('read_files', { paths: ['a.txt', 'dir/b.txt', './a.txt'] }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output.files.map((x: { path: string }) => x.path)).toEqual(['a.txt', 'dir/b.txt', './a.txt']);
      expect(fileContent(r, 'a.txt')).toBe('alpha');
      expect(fileContent(r, 'dir/b.txt')).toBe('beta\nline 2');
      expect(fileContent(r, './a.txt')).toBe('alpha');
    });

    it('reports a missing file in its entry, without failing the call', async () => {
      const s = await session();
      write(s, 'here.txt', 'x');
      const r = await f.api.one(s, rt('read_files', { paths: ['missing.txt', 'here.txt'] }));
      expect(r.status).toBe('ok');
      expect(r.output.files[0]).toMatchObject({ path: 'missing.txt', content: null });
      expect(JSON.stringify(r.output.files[0])).toMatch(/not found/i);
      expect(fileContent(r, 'here.txt')).toBe('x');
    });
  });

  describe('find_files', () => {
    it('matches a glob against the workspace and answers sorted workspace-relative paths', async () => {
      const s = await session();
      for (const p of ['b.txt', 'a.txt', 'src/x.ts', 'src/deep/y.ts', 'src/z.txt', 'notes.md']) write(s, p, p);
      const all = await f.api.one(s, rt('find_files', { pattern: '**/*.txt' }));
      expect(all.status).toBe('ok');
      expect(all.output).toEqual({ paths: ['a.txt', 'b.txt', 'src/z.txt'] });
      const ts = await f.api.one(s, rt('find_files', { pattern: 'src/**/*.ts' }));
      expect(ts.output.paths).toEqual(['src/deep/y.ts', 'src/x.ts']);
      const top = await f.api.one(s, rt('find_files', { pattern: '*.{md,txt}' }));
      expect(top.output.paths).toEqual(['a.txt', 'b.txt', 'notes.md']);
      const none = await f.api.one(s, rt('find_files', { pattern: '**/*.rs' }));
      expect(none).toMatchObject({ status: 'ok', output: { paths: [] } });
    });
  });

  describe('edit_file', () => {
    it('writes a whole file with {path, content}, creating parent directories, and answers {path, bytes}', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('edit_file', { path: 'new/dir/file.txt', content: 'héllo' }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output).toMatchObject({ path: 'new/dir/file.txt', bytes: Buffer.byteLength('héllo') });
      expect(readFileSync(path.join(f.service.workspace(s), 'new/dir/file.txt'), 'utf8')).toBe('héllo');
      const again = await f.api.one(s, rt('edit_file', { path: 'new/dir/file.txt', content: 'short' }));
      expect(again.output).toMatchObject({ bytes: 5 });
      expect(readFileSync(path.join(f.service.workspace(s), 'new/dir/file.txt'), 'utf8')).toBe('short');
    });

    it('replaces exactly one occurrence with {path, old, new}, keeping `$&` in new literal', async () => {
      const s = await session();
      write(s, 'r.txt', 'one two three');
      const r = await f.api.one(s, rt('edit_file', { path: 'r.txt', old: 'two', new: '2 $& $1' }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      const after = readFileSync(path.join(f.service.workspace(s), 'r.txt'), 'utf8');
      expect(after).toBe('one 2 $& $1 three');
      expect(r.output).toMatchObject({ path: 'r.txt', bytes: Buffer.byteLength(after) });
    });

    it('ends error/handler_error and leaves the file alone when `old` occurs twice or not at all', async () => {
      const s = await session();
      write(s, 'r.txt', 'aa bb aa');
      const twice = await f.api.one(s, rt('edit_file', { path: 'r.txt', old: 'aa', new: 'cc' }));
      expect(twice.status).toBe('error');
      expect(twice.error?.code).toBe('handler_error');
      expect(twice.error?.message).toMatch(/2 occurrences|exactly once/);
      const never = await f.api.one(s, rt('edit_file', { path: 'r.txt', old: 'zz', new: 'cc' }));
      expect(never).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(never.error?.message).toMatch(/no occurrence|exactly once/);
      const overlapping = await f.api.one(s, rt('edit_file', { path: 'r.txt', old: 'a', new: 'x' }));
      expect(overlapping).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(readFileSync(path.join(f.service.workspace(s), 'r.txt'), 'utf8')).toBe('aa bb aa');
    });

    it('ends error/handler_error when replacing in a file that does not exist', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('edit_file', { path: 'nope.txt', old: 'a', new: 'b' }));
      expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(r.error?.message).toMatch(/does not exist/);
    });
  });

  describe('run_command', () => {
    it('runs sh in the workspace and answers {exitCode, stdout, stderr}', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('run_command', { command: 'pwd; echo err >&2; printf "%s" "$((6*7))"' }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output.exitCode).toBe(0);
      expect(r.output.stdout).toBe(`${f.service.workspace(s)}\n42`);
      expect(r.output.stderr).toBe('err\n');
    });

    it('treats a non-zero exit as ok, with the exit code in the output', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('run_command', { command: 'echo failing; exit 3' }));
      expect(r.status).toBe('ok');
      expect(r.output).toMatchObject({ exitCode: 3, stdout: 'failing\n' });
      const missing = await f.api.one(s, rt('run_command', { command: 'no-such-command-xyz' }));
      expect(missing.status).toBe('ok');
      expect(missing.output.exitCode).toBe(127);
    });

    it('past timeoutMs kills the whole process group and ends error/timeout', async () => {
      const s = await session();
      const started = Date.now();
      const bg = markedSeconds(30);
      const r = await f.api.one(s, rt('run_command', { command: `sleep ${bg} & echo started; wait`, timeoutMs: 700 }));
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.status, JSON.stringify(r)).toBe('error');
      expect(r.error?.code).toBe('timeout');
      for (let i = 0; i < 40 && pidsWithArg(bg).length > 0; i++) await sleep(50);
      expect(pidsWithArg(bg), `background child sleep ${bg} of the timed-out command still runs`).toEqual([]);
    });

    it('does not pass the service environment (REDIS_URL, TD_*) to commands', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('run_command', { command: 'env' }));
      expect(r.status).toBe('ok');
      expect(r.output.stdout).not.toMatch(/^(TD_|REDIS_URL)/m);
    });
  });

  describe('http_request', () => {
    it('sends a GET with headers and answers {status, headers, body}', async () => {
      const s = await session();
      const tag = tagOf('get');
      const r = await f.api.one(
        s,
        rt('http_request', {
          url: f.target.url('echo', tag),
          headers: { 'X-Probe': 'yes', Accept: 'application/json' },
        }),
      );
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output.status).toBe(200);
      expect(r.output.headers['content-type']).toMatch(/application\/json/);
      expect(httpBody(r)).toMatchObject({ id: `${tag}/0`, method: 'GET', headers: { 'x-probe': 'yes' } });
    });

    it('sends a POST with its body and method', async () => {
      const s = await session();
      const tag = tagOf('post');
      const r = await f.api.one(
        s,
        rt('http_request', {
          url: f.target.url('echo', tag),
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: 'payload-1',
        }),
      );
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(httpBody(r)).toMatchObject({ method: 'POST', body: 'payload-1' });
      expect(f.target.tag(tag).requests[0]?.headers['content-type']).toBe('text/plain');
    });

    it('answers an HTTP 404 or 500 as ok with that status', async () => {
      const s = await session();
      const tag = tagOf('status');
      const b = await f.api.round(s, uid('run'), [
        rt('http_request', { url: f.target.url('status', tag, 0, { code: '404' }) }),
        rt('http_request', { url: f.target.url('status', tag, 1, { code: '500' }) }),
      ]);
      expect(b.results.map((r) => [r.status, r.output?.status])).toEqual([
        ['ok', 404],
        ['ok', 500],
      ]);
    });

    it('ends error/handler_error when the server drops the connection', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('http_request', { url: f.target.url('reset', tagOf('reset')) }));
      expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
    });
  });

  describe('fetch_page', () => {
    it('answers {url, status, text} with the page as readable text (no markup, scripts or styles)', async () => {
      const s = await session();
      const tag = tagOf('page');
      const url = f.target.url('page', tag);
      const r = await f.api.one(s, rt('fetch_page', { url }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output).toMatchObject({ url, status: 200 });
      expect(r.output.text).toContain(`Marker ${tag}/0`);
      expect(r.output.text).toContain('hello from the target');
      expect(r.output.text).not.toMatch(/<h1>|<b>|var hidden|color:red/);
    });
  });

  describe('search_web', () => {
    it('asks TD_SEARCH_URL?q=<query>&format=json (not subject to TD_HTTP_ALLOW) and answers {results: [{title, url, snippet}]}', async () => {
      const s = await session();
      const query = `conformance & co ${uid('q')}`;
      const r = await f.api.one(s, rt('search_web', { query }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output.results).toEqual([
        {
          title: `First result for ${query}`,
          url: `https://example.invalid/1/${encodeURIComponent(query)}`,
          snippet: `snippet one about ${query}`,
        },
        {
          title: `Second result for ${query}`,
          url: `https://example.invalid/2/${encodeURIComponent(query)}`,
          snippet: `snippet two about ${query}`,
        },
      ]);
      const asked = f.target.requests
        .filter((q) => q.path === '/searx')
        .map((q) => new URLSearchParams(q.search))
        .find((p) => p.get('q') === query);
      expect(asked?.get('format')).toBe('json');
    });
  });

  describe('calculate', () => {
    it('answers {value: number} with precedence, functions and parentheses', async () => {
      const s = await session();
      const b = await f.api.round(s, uid('run'), [
        rt('calculate', { expression: '2 + 3 * 4' }),
        rt('calculate', { expression: '(2 + 3) * 4' }),
        rt('calculate', { expression: 'sqrt(16) + 2^3' }),
        rt('calculate', { expression: '-7 / 2' }),
      ]);
      expect(b.results.map((r) => r.output?.value)).toEqual([14, 20, 12, -3.5]);
      expect(b.results.every((r) => r.status === 'ok')).toBe(true);
    });

    it('never evaluates code: a JavaScript expression ends error/handler_error', async () => {
      const s = await session();
      const b = await f.api.round(s, uid('run'), [
        rt('calculate', { expression: 'process.exit(1)' }),
        rt('calculate', { expression: 'constructor.constructor("return 1")()' }),
        rt('calculate', { expression: '1 +' }),
      ]);
      for (const r of b.results) expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(f.service.coordinator.hasExited).toBe(false);
    });
  });

  describe('write_todo', () => {
    it('answers {items} with done defaulting to false', async () => {
      const s = await session();
      const r = await f.api.one(s, rt('write_todo', { items: [{ text: 'first' }, { text: 'second', done: true }] }));
      expect(r.status, JSON.stringify(r)).toBe('ok');
      expect(r.output).toEqual({
        items: [
          { text: 'first', done: false },
          { text: 'second', done: true },
        ],
      });
    });

    it('saves a repeated list again (never deduped), so the saved list is the one the model was told of last', async () => {
      const s = await session();
      const run = uid('run');
      const saved = () =>
        JSON.parse(readFileSync(path.join(f.service.workspace(s), '.tool-dispatch/todo.json'), 'utf8'));
      const list = { items: [{ text: 'a' }] };
      expect((await f.api.one(s, rt('write_todo', list), run)).status).toBe('ok');
      expect((await f.api.one(s, rt('write_todo', { items: [] }), run)).status).toBe('ok');
      expect(saved().items).toEqual([]);
      const again = await f.api.one(s, rt('write_todo', list), run);
      expect(again.status).toBe('ok');
      expect(again.dedupedFrom).toBeUndefined();
      expect(saved().items).toEqual([{ text: 'a', done: false }]);
    });
  });

  describe('find_tools', () => {
    it('answers {tools: ToolDefinition[]} by names and by query', async () => {
      const s = await f.api.session([]);
      const byName = await f.api.one(s, direct('find_tools', { names: ['calculate', 'edit_file'] }));
      expect(byName.status).toBe('ok');
      const names = byName.output.tools.map((t: { name: string }) => t.name).sort();
      expect(names).toEqual(['calculate', 'edit_file']);
      const edit = byName.output.tools.find((t: { name: string }) => t.name === 'edit_file');
      expect(edit).toMatchObject({ concurrency: 'serial', confirm: true });
      expect(edit.parameters.properties.path).toBeDefined();
      const byQuery = await f.api.one(s, direct('find_tools', { query: 'search the web' }));
      expect(byQuery.output.tools.map((t: { name: string }) => t.name)).toContain('search_web');
    });
  });
});
