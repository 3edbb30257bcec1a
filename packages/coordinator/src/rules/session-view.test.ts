import { describe, expect, it } from 'vitest';
import { Catalog, sessionSpecs } from './catalog.js';
import { buildToolsView, initiallyFetched, loadedSet } from './session-view.js';

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

  describe('when the provider is claude-code', () => {
    it('gives the model every runnable tool except run_tool, and ask_user, which a person answers', () => {
      const view = buildToolsView('claude-code', specs, runnable);
      const names = view.tools.map((t) => t.name);
      expect(names).not.toContain('run_tool');
      expect(names.sort()).toEqual(['ask_user', 'find_tools', ...runnable, 'ui_pick'].sort());
    });

    it('loads every tool but run_tool, with only find_tools and client tools fetched', () => {
      const loaded = loadedSet('claude-code', specs, client);
      expect(loaded.has('run_tool')).toBe(false);
      expect(loaded.has('read_files')).toBe(true);
      expect(initiallyFetched('claude-code', client).sort()).toEqual(['find_tools', 'ui_pick']);
    });
  });
});
