import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MAX_OUTPUT_BYTES, MAX_STREAM_BYTES } from '@tool-dispatch/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { readFiles } from './read-files.js';

let ws: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  ws = await makeWorkspace();
  await mkdir(path.join(ws.dir, 'w/src'), { recursive: true });
  await writeFile(path.join(ws.dir, 'w/a.txt'), 'alpha');
  await writeFile(path.join(ws.dir, 'w/src/b.ts'), 'export const b = 1;\n');
  await writeFile(path.join(ws.dir, 'outside.txt'), 'secret');
});
afterEach(() => ws.cleanup());

const ctx = () => makeContext(path.join(ws.dir, 'w'));

describe('read_files', () => {
  it('returns each file with the path as the caller gave it', async () => {
    const out = await readFiles({ paths: ['./a.txt', 'src/b.ts'] }, ctx());
    expect(out.files).toEqual([
      { path: './a.txt', content: 'alpha' },
      { path: 'src/b.ts', content: 'export const b = 1;\n' },
    ]);
  });

  it('reports a missing file in its own entry without failing the other files', async () => {
    const out = await readFiles({ paths: ['nope.txt', 'a.txt'] }, ctx());
    expect(out.files).toEqual([
      { path: 'nope.txt', content: null, error: 'not found' },
      { path: 'a.txt', content: 'alpha' },
    ]);
  });

  it('reports a directory in its own entry', async () => {
    const out = await readFiles({ paths: ['src'] }, ctx());
    expect(out.files[0]).toEqual({ path: 'src', content: null, error: 'is a directory' });
  });

  it('does not block on a FIFO', async () => {
    execFileSync('mkfifo', [path.join(ws.dir, 'w/pipe')]);
    const out = await readFiles({ paths: ['pipe'] }, ctx());
    expect(out.files[0]).toEqual({ path: 'pipe', content: null, error: 'is not a regular file' });
  });

  it('cuts a file at MAX_STREAM_BYTES and flags it truncated', async () => {
    await writeFile(path.join(ws.dir, 'w/big.txt'), 'x'.repeat(MAX_STREAM_BYTES + 10));
    const out = await readFiles({ paths: ['big.txt'] }, ctx());
    const [entry] = out.files;
    expect(entry).toMatchObject({ path: 'big.txt', truncated: true });
    expect(entry?.content).toHaveLength(MAX_STREAM_BYTES);
  });

  it('does not split a multi-byte character at the cut', async () => {
    await writeFile(path.join(ws.dir, 'w/utf.txt'), `${'x'.repeat(MAX_STREAM_BYTES - 1)}é and more`);
    const out = await readFiles({ paths: ['utf.txt'] }, ctx());
    expect(out.files[0]?.content).toBe('x'.repeat(MAX_STREAM_BYTES - 1));
  });

  it('leaves files unread, with a note, once the output would pass MAX_OUTPUT_BYTES', async () => {
    const paths: string[] = [];
    for (let i = 0; i < 6; i++) {
      await writeFile(path.join(ws.dir, `w/f${i}.txt`), 'y'.repeat(MAX_STREAM_BYTES - 100));
      paths.push(`f${i}.txt`);
    }
    const out = await readFiles({ paths }, ctx());
    expect(Buffer.byteLength(JSON.stringify(out))).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    expect(out.files.filter((f) => f.content !== null)).toHaveLength(3);
    expect(out.files[5]).toMatchObject({
      content: null,
      error: expect.stringMatching(/read this file in another call/),
    });
  });

  describe('when a path leaves the workspace', () => {
    it('fails the call for "../x", naming the escape', async () => {
      await expect(readFiles({ paths: ['a.txt', '../outside.txt'] }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/"\.\.\/outside\.txt" escapes the session workspace/),
      });
    });

    it('fails the call for "/etc/passwd", saying it is absolute', async () => {
      await expect(readFiles({ paths: ['/etc/passwd'] }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/is absolute/),
      });
    });

    it('fails the call for a symlink pointing out', async () => {
      await symlink(path.join(ws.dir, 'outside.txt'), path.join(ws.dir, 'w/link.txt'));
      await expect(readFiles({ paths: ['link.txt'] }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/escapes the session workspace \(through a symlink\)/),
      });
    });

    it('fails the call for a file under a symlinked directory pointing out', async () => {
      await symlink(ws.dir, path.join(ws.dir, 'w/up'));
      await expect(readFiles({ paths: ['up/outside.txt'] }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/"up\/outside\.txt" escapes the session workspace \(through a symlink\)/),
      });
    });

    it('fails the call for a relative symlink that climbs out', async () => {
      await symlink('../../outside.txt', path.join(ws.dir, 'w/src/link.txt'));
      await expect(readFiles({ paths: ['src/link.txt'] }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/through a symlink/),
      });
    });
  });

  it('rejects paths that are not an array of strings', async () => {
    await expect(readFiles({ paths: 'a.txt' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: 'args.paths must be an array of strings, got string',
    });
  });
});

describe('read_files pages (API.md v1.2: offset, limit, totalLines)', () => {
  const text = Array.from({ length: 25 }, (_, i) => `line ${i + 1} é 🙂\n`).join('');

  it('answers lines offset..offset+limit-1 with the file’s line count, each with its line break', async () => {
    await writeFile(path.join(ws.dir, 'w/p.txt'), text);
    const out = await readFiles({ paths: ['p.txt'], offset: 3, limit: 2 }, ctx());
    expect(out.files[0]).toEqual({ path: 'p.txt', content: 'line 3 é 🙂\nline 4 é 🙂\n', totalLines: 25 });
    const tail = await readFiles({ paths: ['p.txt'], offset: 24 }, ctx());
    expect(tail.files[0]).toMatchObject({ content: 'line 24 é 🙂\nline 25 é 🙂\n', totalLines: 25 });
    const past = await readFiles({ paths: ['p.txt'], offset: 99, limit: 5 }, ctx());
    expect(past.files[0]).toMatchObject({ content: '', totalLines: 25 });
  });

  it('puts pages back together byte for byte, a last line without a break included', async () => {
    await writeFile(path.join(ws.dir, 'w/q.txt'), `${text}no break at the end`);
    let whole = '';
    for (let offset = 1; offset <= 26; offset += 4) {
      const out = await readFiles({ paths: ['q.txt'], offset, limit: 4 }, ctx());
      whole += out.files[0]?.content ?? '';
    }
    expect(whole).toBe(`${text}no break at the end`);
  });

  it('applies the page to every path, and leaves entries without offset/limit as before', async () => {
    await writeFile(path.join(ws.dir, 'w/p.txt'), text);
    const out = await readFiles({ paths: ['p.txt', 'a.txt'], limit: 1 }, ctx());
    expect(out.files).toEqual([
      { path: 'p.txt', content: 'line 1 é 🙂\n', totalLines: 25 },
      { path: 'a.txt', content: 'alpha', totalLines: 1 },
    ]);
    expect((await readFiles({ paths: ['a.txt'] }, ctx())).files[0]).toEqual({ path: 'a.txt', content: 'alpha' });
  });

  it('pages a file past MAX_STREAM_BYTES, cutting only the page itself at the cap', async () => {
    const line = `${'z'.repeat(99)}\n`;
    await writeFile(path.join(ws.dir, 'w/big.txt'), line.repeat(Math.ceil((MAX_STREAM_BYTES * 2) / 100)));
    const last = await readFiles({ paths: ['big.txt'], offset: 10_000, limit: 1 }, ctx());
    expect(last.files[0]).toMatchObject({ content: line, totalLines: Math.ceil((MAX_STREAM_BYTES * 2) / 100) });
  });

  it('refuses an offset or limit that is not a positive integer', async () => {
    await expect(readFiles({ paths: ['a.txt'], offset: 0 }, ctx())).rejects.toMatchObject({
      message: /args.offset must be an integer/,
    });
    await expect(readFiles({ paths: ['a.txt'], limit: 1.5 }, ctx())).rejects.toMatchObject({
      message: /args.limit must be an integer/,
    });
  });

  it('reads a whole file past MAX_STREAM_BYTES when the session has a result budget (an artifact takes it)', async () => {
    await writeFile(path.join(ws.dir, 'w/big.txt'), 'x'.repeat(MAX_STREAM_BYTES + 10));
    const out = await readFiles({ paths: ['big.txt'] }, { ...ctx(), resultBudget: { call: 2000 } });
    expect(out.files[0]?.content).toHaveLength(MAX_STREAM_BYTES + 10);
  });
});
