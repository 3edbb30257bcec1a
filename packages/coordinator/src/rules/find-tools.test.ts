import type { ToolSpec } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { Catalog, resolveSpec } from './catalog.js';
import { findTools, indexBuilds } from './find-tools.js';

const builtins = new Catalog().all();
const user = (name: string, description: string): ToolSpec =>
  resolveSpec({ name, description, parameters: { type: 'object' } }, 'user');
const names = (out: { tools: { name: string }[] }) => out.tools.map((t) => t.name);

describe('findTools', () => {
  describe('when asked for names', () => {
    it('returns the definitions of exactly those tools, in the order asked', () => {
      const out = findTools(builtins, { names: ['edit_file', 'read_files'] });
      expect(names(out)).toEqual(['edit_file', 'read_files']);
      expect(out.missing).toBeUndefined();
    });

    it('returns each definition as clients see it: name, description, parameters, concurrency, confirm', () => {
      const [edit] = findTools(builtins, { names: ['edit_file'] }).tools;
      expect(edit).toEqual({
        name: 'edit_file',
        description: expect.any(String),
        parameters: expect.objectContaining({ type: 'object' }),
        concurrency: 'serial',
        confirm: true,
      });
    });

    it('lists the names it does not know as missing', () => {
      const out = findTools(builtins, { names: ['read_files', 'teleport', 'api_nowhere'] });
      expect(names(out)).toEqual(['read_files']);
      expect(out.missing).toEqual(['teleport', 'api_nowhere']);
    });

    it('never offers run_tool, even by name', () => {
      const out = findTools(builtins, { names: ['run_tool'] });
      expect(out.tools).toEqual([]);
      expect(out.missing).toEqual(['run_tool']);
    });

    it('matches names exactly, case included', () => {
      expect(findTools(builtins, { names: ['READ_FILES', 'read'] }).missing).toEqual(['READ_FILES', 'read']);
    });

    it('skips entries that are not strings', () => {
      const out = findTools(builtins, { names: ['calculate', 3, null] });
      expect(names(out)).toEqual(['calculate']);
      expect(out.missing).toBeUndefined();
    });

    it('returns nothing for an empty list, rather than everything', () => {
      expect(findTools(builtins, { names: [] })).toEqual({ tools: [] });
    });
  });

  describe('when given a query', () => {
    it('matches words against names and descriptions, whatever their case', () => {
      expect(names(findTools(builtins, { query: 'Calculate' }))[0]).toBe('calculate');
      expect(names(findTools(builtins, { query: 'arithmetic' }))).toEqual(['calculate']);
    });

    it('ranks an exact name above a name that contains the word, above a description that does', () => {
      const available = [
        user('api_notes_search', 'Look up notes.'),
        user('api_lookup', 'Search the archive.'),
        user('search', 'Exact.'),
      ];
      expect(names(findTools(available, { query: 'search' }))).toEqual(['search', 'api_notes_search', 'api_lookup']);
    });

    it('adds up the words it matches, so a tool matching more words ranks first', () => {
      const out = findTools(builtins, { query: 'read files from the workspace' });
      expect(names(out)[0]).toBe('read_files');
    });

    it('breaks ties by name', () => {
      const available = [user('api_b', 'Weather now.'), user('api_a', 'Weather now.')];
      expect(names(findTools(available, { query: 'weather' }))).toEqual(['api_a', 'api_b']);
    });

    it('leaves out tools that match no word', () => {
      expect(findTools(builtins, { query: 'xylophone' })).toEqual({ tools: [] });
    });

    it('returns the best 5 by default, `limit` of them when asked, cutting the same ranking', () => {
      const many = Array.from({ length: 30 }, (_, i) => user(`api_w${String(i).padStart(2, '0')}`, 'Weather.'));
      const five = names(findTools(many, { query: 'weather' }));
      expect(five).toHaveLength(5);
      const twenty = names(findTools(many, { query: 'weather', limit: 20 }));
      expect(twenty).toHaveLength(20);
      expect(twenty.slice(0, 5)).toEqual(five);
      expect(names(findTools(many, { query: 'weather', limit: 2 }))).toEqual(five.slice(0, 2));
      expect(five[0]).toBe('api_w00');
    });

    it('puts a tool named by a word of the query first, whatever else matches better', () => {
      const out = names(findTools(builtins, { query: 'please use write_todo to read files from the workspace' }));
      expect(out[0]).toBe('write_todo');
      expect(out).toContain('read_files');
      expect(names(findTools(builtins, { query: 'http_request' }))[0]).toBe('http_request');
    });

    it('matches parameter names and descriptions too', () => {
      const available = [
        user('api_a', 'Does a thing.'),
        resolveSpec(
          {
            name: 'api_b',
            description: 'Does another thing.',
            parameters: { type: 'object', properties: { isbn: { type: 'string', description: 'The barcode.' } } },
          },
          'user',
        ),
      ];
      expect(names(findTools(available, { query: 'isbn' }))).toEqual(['api_b']);
      expect(names(findTools(available, { query: 'barcode' }))).toEqual(['api_b']);
    });

    it('answers the same order for the same tools and query, and indexes a set of tools once', () => {
      const first = names(findTools(builtins, { query: 'file', limit: 20 }));
      const built = indexBuilds();
      for (let i = 0; i < 5; i++) expect(names(findTools(builtins, { query: 'file', limit: 20 }))).toEqual(first);
      expect(indexBuilds()).toBe(built);
      findTools([...builtins, user('api_new', 'A new file tool.')], { query: 'file' });
      expect(indexBuilds()).toBe(built + 1);
    });

    it('does not offer find_tools itself among the matches, unless named', () => {
      expect(names(findTools(builtins, { query: 'find tools by a query', limit: 20 }))).not.toContain('find_tools');
      expect(names(findTools(builtins, { query: 'find_tools' }))[0]).toBe('find_tools');
    });

    it('never offers run_tool', () => {
      expect(names(findTools(builtins, { query: 'run tool call' }))).not.toContain('run_tool');
    });
  });

  describe('when given names and a query', () => {
    it('returns the named tools first, then the matches, each once', () => {
      const out = findTools(builtins, { names: ['write_todo', 'calculate'], query: 'calculate' });
      expect(names(out)).toEqual(['write_todo', 'calculate']);
    });
  });

  describe('when given neither', () => {
    it('returns every tool offered but run_tool', () => {
      const expected = builtins.map((s) => s.name).filter((n) => n !== 'run_tool');
      expect(names(findTools(builtins, {}))).toEqual(expected);
      expect(names(findTools(builtins, { query: '   ' }))).toEqual(expected);
    });
  });
});
