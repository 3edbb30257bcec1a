import { describe, expect, it } from 'vitest';
import { Catalog } from './catalog.js';
import { covers, httpMethod, invalidationsOf, isDedupable, normalizePath, pathsNamed, pathsRead } from './dedupe.js';

const catalog = new Catalog();
const spec = (name: string) => catalog.get(name);

describe('normalizePath', () => {
  it('makes ./a.txt, b/../a.txt and a.txt one path', () => {
    expect(normalizePath('./a.txt')).toBe('a.txt');
    expect(normalizePath('b/../a.txt')).toBe('a.txt');
    expect(normalizePath('a.txt')).toBe('a.txt');
  });

  it('drops repeated ./, doubled slashes, trailing slashes and backslashes', () => {
    expect(normalizePath('././src//x.ts')).toBe('src/x.ts');
    expect(normalizePath('src/dir/')).toBe('src/dir');
    expect(normalizePath('src\\x.ts')).toBe('src/x.ts');
  });

  it('keeps different files apart', () => {
    expect(normalizePath('b/a.txt')).not.toBe(normalizePath('a.txt'));
    expect(normalizePath('../a.txt')).not.toBe(normalizePath('a.txt'));
  });

  it('gives . for the workspace itself', () => {
    expect(normalizePath('')).toBe('.');
    expect(normalizePath('./')).toBe('.');
    expect(normalizePath('b/..')).toBe('.');
  });
});

describe('httpMethod', () => {
  it('upper-cases the method and reads a missing one as GET', () => {
    expect(httpMethod({ method: 'post' })).toBe('POST');
    expect(httpMethod({})).toBe('GET');
    expect(httpMethod({ method: 7 })).toBe('GET');
  });
});

describe('isDedupable', () => {
  it('dedupes read-only built-ins such as read_files, find_files and calculate', () => {
    for (const name of ['read_files', 'find_files', 'calculate', 'fetch_page', 'search_web'])
      expect(isDedupable(spec(name), name, {})).toBe(true);
  });

  it('never dedupes run_command or edit_file, whatever the definition says', () => {
    const claims = { dedupe: true };
    expect(isDedupable({ name: 'run_command', ...claims }, 'run_command', { command: 'ls' })).toBe(false);
    expect(isDedupable({ name: 'edit_file', ...claims }, 'edit_file', { path: 'a', content: '' })).toBe(false);
    expect(isDedupable(undefined, 'run_command', { command: 'ls' })).toBe(false);
    expect(isDedupable(undefined, 'edit_file', { path: 'a', content: '' })).toBe(false);
  });

  it('never dedupes generate_* tools, built-in or not', () => {
    expect(isDedupable(spec('generate_image'), 'generate_image', { prompt: 'x' })).toBe(false);
    expect(isDedupable({ name: 'generate_video', dedupe: true }, 'generate_video', {})).toBe(false);
    expect(isDedupable(undefined, 'generate_audio', {})).toBe(false);
  });

  it('dedupes http_request only for GET, in any case, and when no method is given', () => {
    const http = spec('http_request');
    expect(isDedupable(http, 'http_request', { url: 'https://x.test' })).toBe(true);
    expect(isDedupable(http, 'http_request', { url: 'https://x.test', method: 'get' })).toBe(true);
    for (const method of ['POST', 'put', 'DELETE', 'patch', 'HEAD'])
      expect(isDedupable(http, 'http_request', { url: 'https://x.test', method })).toBe(false);
  });

  it('never dedupes a tool whose definition has dedupe false', () => {
    expect(isDedupable({ name: 'ask_user', dedupe: false }, 'ask_user', { question: 'ok?' })).toBe(false);
    expect(isDedupable({ name: 'api_weather', dedupe: false }, 'api_weather', {})).toBe(false);
    expect(isDedupable({ name: 'api_weather', dedupe: true }, 'api_weather', {})).toBe(true);
  });
});

describe('download_file and write_todo', () => {
  it('are never deduped: each call writes the workspace again (even when the tool says dedupe)', () => {
    expect(isDedupable(spec('download_file'), 'download_file', { url: 'https://x.test/a', path: 'a' })).toBe(false);
    expect(isDedupable(spec('write_todo'), 'write_todo', { items: [] })).toBe(false);
    expect(isDedupable({ name: 'write_todo', dedupe: true }, 'write_todo', { items: [] })).toBe(false);
  });
});

describe('pathsNamed', () => {
  it('gives the normalised path an edit or a download writes, and the paths a read reads', () => {
    expect(pathsNamed('edit_file', { path: './src/../a.txt', content: '' })).toEqual(['a.txt']);
    expect(pathsNamed('download_file', { url: 'https://x.test', path: 'd/./f.bin' })).toEqual(['d/f.bin']);
    expect(pathsNamed('read_files', { paths: ['./a', 'b'] })).toEqual(['a', 'b']);
  });

  it('gives nothing for tools that name no path', () => {
    expect(pathsNamed('run_command', { command: 'cat a' })).toBeUndefined();
    expect(pathsNamed('find_files', { pattern: '*' })).toBeUndefined();
  });
});

describe('pathsRead', () => {
  it('gives the normalised path of a file_history call, so an edit of it drops the entry', () => {
    expect(pathsRead('file_history', { path: './a/../b.txt' })).toEqual(['b.txt']);
  });

  it('gives the normalised paths of a read_files call', () => {
    expect(pathsRead('read_files', { paths: ['./a.txt', 'b/../c.txt', 'd/e.txt'] })).toEqual([
      'a.txt',
      'c.txt',
      'd/e.txt',
    ]);
  });

  it('skips entries that are not strings', () => {
    expect(pathsRead('read_files', { paths: ['a.txt', 3, null] })).toEqual(['a.txt']);
  });

  it('gives nothing for other tools, or for read_files without a paths array', () => {
    expect(pathsRead('find_files', { paths: ['a.txt'] })).toBeUndefined();
    expect(pathsRead('edit_file', { path: 'a.txt' })).toBeUndefined();
    expect(pathsRead('read_files', { paths: 'a.txt' })).toBeUndefined();
    expect(pathsRead('read_files', {})).toBeUndefined();
  });
});

describe('invalidationsOf', () => {
  describe('when edit_file created the file', () => {
    it('removes read_files entries of the normalised path and every find_files entry', () => {
      expect(invalidationsOf('edit_file', { path: './src/../a.txt', content: 'x' }, true)).toEqual([
        { tool: 'read_files', paths: ['a.txt'] },
        { tool: 'file_history', paths: ['a.txt'] },
        { tool: 'find_files' },
      ]);
    });
  });

  describe('when edit_file changed a file that existed', () => {
    it('removes only the read_files entries of that path, keeping find_files', () => {
      expect(invalidationsOf('edit_file', { path: 'a.txt', old: 'x', new: 'y' }, false)).toEqual([
        { tool: 'read_files', paths: ['a.txt'] },
        { tool: 'file_history', paths: ['a.txt'] },
      ]);
    });
  });

  describe('when it is not known yet whether edit_file creates the file (pass 1 lookahead)', () => {
    it('assumes it may, and removes find_files entries too', () => {
      expect(invalidationsOf('edit_file', { path: 'a.txt', content: 'x' }, undefined)).toEqual([
        { tool: 'read_files', paths: ['a.txt'] },
        { tool: 'file_history', paths: ['a.txt'] },
        { tool: 'find_files' },
      ]);
    });
  });

  it('removes every read_files and find_files entry after run_command, which may touch any file', () => {
    expect(invalidationsOf('run_command', { command: 'rm -rf src' }, undefined)).toEqual([
      { tool: 'read_files' },
      { tool: 'find_files' },
      { tool: 'file_history' },
    ]);
  });

  describe('when download_file wrote a path (API.md v1.1)', () => {
    it('removes the reads and file histories of that path, and every find_files entry when it created the file', () => {
      expect(invalidationsOf('download_file', { url: 'https://x.test/a', path: './a.txt' }, true)).toEqual([
        { tool: 'read_files', paths: ['a.txt'] },
        { tool: 'file_history', paths: ['a.txt'] },
        { tool: 'find_files' },
      ]);
      expect(invalidationsOf('download_file', { url: 'https://x.test/a', path: 'a.txt' }, false)).toEqual([
        { tool: 'read_files', paths: ['a.txt'] },
        { tool: 'file_history', paths: ['a.txt'] },
      ]);
    });
  });

  it('removes nothing for read-only tools, or for an edit_file without a string path', () => {
    expect(invalidationsOf('read_files', { paths: ['a.txt'] }, undefined)).toEqual([]);
    expect(invalidationsOf('http_request', { url: 'https://x.test', method: 'POST' }, undefined)).toEqual([]);
    expect(invalidationsOf('edit_file', { content: 'x' }, true)).toEqual([]);
  });
});

describe('covers', () => {
  const ofA = { tool: 'read_files', paths: ['a.txt'] };

  it('covers an entry of the same tool that read one of its paths', () => {
    expect(covers(ofA, 'read_files', ['b.txt', 'a.txt'])).toBe(true);
  });

  it('does not cover an entry that read other paths only', () => {
    expect(covers(ofA, 'read_files', ['b.txt', 'dir/a.txt'])).toBe(false);
    expect(covers(ofA, 'read_files', undefined)).toBe(false);
  });

  it('does not cover entries of another tool', () => {
    expect(covers(ofA, 'find_files', ['a.txt'])).toBe(false);
    expect(covers({ tool: 'find_files' }, 'read_files', ['a.txt'])).toBe(false);
  });

  it('covers every entry of the tool when it names no paths', () => {
    expect(covers({ tool: 'read_files' }, 'read_files', ['x.txt'])).toBe(true);
    expect(covers({ tool: 'find_files' }, 'find_files', undefined)).toBe(true);
  });

  it('matches an edit_file of ./a.txt against a read of b/../a.txt once both are normalised', () => {
    const [inv] = invalidationsOf('edit_file', { path: './a.txt', content: '' }, false);
    expect(inv && covers(inv, 'read_files', pathsRead('read_files', { paths: ['b/../a.txt'] }))).toBe(true);
  });
});
