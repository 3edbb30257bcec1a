import type { ToolSpec } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { announcedSpec, Catalog, sessionSpecs } from './catalog.js';
import {
  buildToolsView,
  CONTEXT_MAX_CHARS,
  CONTEXT_MAX_PER_TOOL,
  fetchedSet,
  initiallyFetched,
  loadedSet,
} from './session-view.js';

const client = [{ name: 'ui_pick', description: 'Pick a file in the UI.', parameters: { type: 'object' } }];
const specs = sessionSpecs(new Catalog(), client);
const runnable = new Set(['read_files', 'calculate', 'run_command', 'edit_file', 'http_request', 'fetch_page']);

describe('deferred schemas and providers', () => {
  describe('when the provider is not claude-code', () => {
    it('gives the model only find_tools, run_tool and client tools, and names the others in the context', () => {
      const view = buildToolsView('openai', specs, runnable);
      expect(view.tools.map((t) => t.name).sort()).toEqual(['find_tools', 'run_tool', 'ui_pick']);
      for (const n of runnable) expect(view.context).toContain(n);
      expect(view.context).not.toContain('chat_history'); // no handler: not offered
    });

    it('loads find_tools, run_tool and client tools, all fetched from the start', () => {
      expect([...loadedSet('openai', specs, client)].sort()).toEqual(['find_tools', 'run_tool', 'ui_pick']);
      expect(initiallyFetched('anthropic', client).sort()).toEqual(['find_tools', 'run_tool', 'ui_pick']);
    });
  });

  describe('when the provider is mcp (API.md v1.2 "MCP server")', () => {
    it('gives every runnable tool but run_tool with its full schema, find_tools included', () => {
      const view = buildToolsView('mcp', specs, runnable, new Set(['find_tools']));
      const names = view.tools.map((t) => t.name);
      expect(names).not.toContain('run_tool');
      expect(names.sort()).toEqual(['ask_user', 'find_tools', ...runnable, 'ui_pick'].sort());
      expect(view.tools.find((t) => t.name === 'read_files')?.parameters).toEqual(specs.get('read_files')?.parameters);
    });

    it('loads every tool but run_tool, and treats every tool of the catalog as fetched, later ones too', () => {
      expect(loadedSet('mcp', specs, client).has('run_tool')).toBe(false);
      expect(loadedSet('mcp', specs, client).has('read_files')).toBe(true);
      expect(initiallyFetched('mcp', client)).not.toContain('run_tool');
      const fetched = fetchedSet('mcp', ['find_tools'], specs);
      for (const name of specs.keys()) expect(fetched.has(name)).toBe(true);
      expect([...fetchedSet('openai', ['find_tools'], specs)]).toEqual(['find_tools']);
    });
  });

  describe('when the provider is claude-code', () => {
    it('gives the model every runnable tool except run_tool, and ask_user, which a person answers', () => {
      const view = buildToolsView('claude-code', specs, runnable);
      const names = view.tools.map((t) => t.name);
      expect(names).not.toContain('run_tool');
      expect(names.sort()).toEqual(['ask_user', 'find_tools', ...runnable, 'ui_pick'].sort());
    });

    it('shows a tool not fetched yet with its description and the open schema, and its full schema once fetched (API.md v1.1)', () => {
      const before = buildToolsView('claude-code', specs, runnable, new Set(['find_tools']));
      const read = before.tools.find((t) => t.name === 'read_files');
      expect(read?.parameters).toEqual({ type: 'object' });
      expect(read?.description).toBe(specs.get('read_files')?.description);
      const after = buildToolsView('claude-code', specs, runnable, new Set(['find_tools', 'read_files']));
      expect(after.tools.find((t) => t.name === 'read_files')?.parameters).toEqual(specs.get('read_files')?.parameters);
      expect(before.tools.find((t) => t.name === 'find_tools')?.parameters).toEqual(
        specs.get('find_tools')?.parameters,
      );
      expect(before.tools.find((t) => t.name === 'ui_pick')?.parameters).toEqual(specs.get('ui_pick')?.parameters);
    });

    it('names in the context only the tools whose schema is still deferred, none once all are fetched', () => {
      const schemaFirst = (context: string) =>
        (/call it again with args that match: (.*)\.$/m.exec(context)?.[1] ?? '').split(', ').filter(Boolean);
      const before = buildToolsView('claude-code', specs, runnable, new Set(['find_tools']));
      expect(schemaFirst(before.context).sort()).toEqual(['ask_user', ...runnable].sort());
      const some = buildToolsView('claude-code', specs, runnable, new Set(['find_tools', 'calculate', 'read_files']));
      expect(schemaFirst(some.context)).not.toContain('calculate');
      expect(schemaFirst(some.context)).not.toContain('read_files');
      expect(schemaFirst(some.context)).toContain('edit_file');
      const all = buildToolsView('claude-code', specs, runnable, new Set(['find_tools', 'ask_user', ...runnable]));
      expect(schemaFirst(all.context)).toEqual([]);
      expect(all.context).toMatch(/full schema: call any of them directly/);
    });

    it('never advises run_tool in the descriptions, which claude-code sessions do not have', () => {
      const view = buildToolsView('claude-code', specs, runnable, new Set(['find_tools']));
      for (const t of view.tools) expect(t.description).not.toMatch(/run_tool/);
      expect(view.context).not.toMatch(/run_tool/);
    });

    it('loads every tool but run_tool, with only find_tools and client tools fetched', () => {
      const loaded = loadedSet('claude-code', specs, client);
      expect(loaded.has('run_tool')).toBe(false);
      expect(loaded.has('read_files')).toBe(true);
      expect(initiallyFetched('claude-code', client).sort()).toEqual(['find_tools', 'ui_pick']);
    });
  });
});

/** A catalog of the built-ins plus `servers` MCP servers of `perServer` tools each, all runnable. */
function bigCatalog(servers: number, perServer: number): { specs: Map<string, ToolSpec>; runnable: Set<string> } {
  const out = sessionSpecs(new Catalog(), []);
  for (let i = 0; i < servers; i++) {
    for (let j = 0; j < perServer; j++) {
      const server = `server${i}`;
      const tool = `some_tool_with_a_longish_name_${j}`;
      const spec = announcedSpec({
        server,
        tool,
        name: `mcp__${server}__${tool}`,
        description: `Does the ${j}th thing of server ${i}, described at length: ${'words '.repeat(40)}.`,
        parameters: { type: 'object' },
        confirm: false,
        dedupe: true,
      });
      out.set(spec.name, spec);
    }
  }
  return { specs: out, runnable: new Set(out.keys()) };
}

describe('the turn context (API.md v1.2: bounded)', () => {
  it('grows by at most 100 characters per deferred tool', () => {
    for (const provider of ['openai', 'claude-code']) {
      let last = buildToolsView(provider, bigCatalog(0, 0).specs, bigCatalog(0, 0).runnable).context.length;
      for (let n = 1; n <= 40; n++) {
        const { specs: s, runnable: r } = bigCatalog(1, n);
        const now = buildToolsView(provider, s, r).context.length;
        expect(now - last, `${provider}, tool ${n}`).toBeLessThanOrEqual(CONTEXT_MAX_PER_TOOL);
        last = now;
      }
    }
  });

  it('cuts a long description to its first sentence, the line to 100 characters', () => {
    const { specs: s, runnable: r } = bigCatalog(1, 1);
    const line = buildToolsView('openai', s, r)
      .context.split('\n')
      .find((l) => l.includes('server0'));
    expect(line?.length).toBeLessThanOrEqual(CONTEXT_MAX_PER_TOOL - 1);
  });

  it('stays under 8000 characters whatever the catalog, naming servers and saying to search', () => {
    for (const [servers, perServer] of [
      [3, 30],
      [20, 50],
      [400, 3],
    ] as const) {
      const { specs: s, runnable: r } = bigCatalog(servers, perServer);
      for (const provider of ['openai', 'anthropic', 'claude-code']) {
        const { context } = buildToolsView(provider, s, r);
        expect(context.length, `${provider} with ${servers}×${perServer}`).toBeLessThan(CONTEXT_MAX_CHARS);
        expect(context).toMatch(/find_tools/);
      }
      const { context } = buildToolsView('openai', s, r);
      expect(context).toMatch(/MCP server server0: \d+ tools/);
      expect(context).toContain('read_files');
    }
  });
});
