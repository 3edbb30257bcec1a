import type { NeutralTool, ToolDefinition, ToolSpec } from '@tool-dispatch/shared';
import type { ToolsView } from '../model.js';

export const CLAUDE_CODE = 'claude-code';

/** DESIGN.md: tools the model may call directly under a provider. */
export function loadedSet(
  provider: string,
  specs: ReadonlyMap<string, ToolSpec>,
  clientTools: readonly ToolDefinition[],
): Set<string> {
  if (provider === CLAUDE_CODE) return new Set([...specs.keys()].filter((n) => n !== 'run_tool'));
  return new Set(['find_tools', 'run_tool', ...clientTools.map((t) => t.name)]);
}

/** Schemas a new session has already been shown: find_tools and client tools (and run_tool where loaded). */
export function initiallyFetched(provider: string, clientTools: readonly ToolDefinition[]): string[] {
  const base = provider === CLAUDE_CODE ? ['find_tools'] : ['find_tools', 'run_tool'];
  return [...base, ...clientTools.map((t) => t.name)];
}

const neutral = (s: ToolSpec): NeutralTool => ({ name: s.name, description: s.description, parameters: s.parameters });

/** The open schema a claude-code tools array shows for a tool whose schema is still deferred (API.md v1.1). */
export const DEFERRED_PARAMETERS: Readonly<Record<string, unknown>> = { type: 'object' };

/** Descriptions that speak of run_tool elsewhere, as claude-code sessions (which have no run_tool) read them. */
const CLAUDE_CODE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  find_tools:
    'Find tools by a search query or exact names and return their full definitions (JSON schemas). ' +
    'Then call a found tool directly by its name, with args that match its schema.',
};

/**
 * A claude-code tools array entry: a tool whose schema the session has not been shown yet has its
 * name and description and the open schema; fetched ones (find_tools, client tools) have it whole.
 */
function claudeCodeTool(s: ToolSpec, fetched: ReadonlySet<string>): NeutralTool {
  const description = CLAUDE_CODE_DESCRIPTIONS[s.name] ?? s.description;
  const parameters = fetched.has(s.name) || s.kind === 'client' ? s.parameters : { ...DEFERRED_PARAMETERS };
  return { name: s.name, description, parameters };
}

/**
 * The tools array for the model's next request and the turn-context text naming deferred tools.
 * `runnable` limits both to tools that can run now (a handler is registered, or the client or a
 * person answers it); `fetched`, the schemas the session has been shown, decides what a
 * claude-code array shows of each.
 */
export function buildToolsView(
  provider: string,
  specs: ReadonlyMap<string, ToolSpec>,
  runnable: ReadonlySet<string>,
  fetched: ReadonlySet<string> = new Set(),
): ToolsView {
  const usable = [...specs.values()].filter(
    (s) =>
      s.kind === 'client' || s.interactive || s.name === 'find_tools' || s.name === 'run_tool' || runnable.has(s.name),
  );
  if (provider === CLAUDE_CODE) {
    const tools = usable.filter((s) => s.name !== 'run_tool').map((s) => claudeCodeTool(s, fetched));
    // Only the schemas still deferred: a fetched tool's first call runs.
    const deferred = usable.filter((s) => s.deferred && s.kind !== 'client' && !fetched.has(s.name)).map((s) => s.name);
    const context = [
      `You have ${tools.length} tools. find_tools and client tools are ready to call.`,
      deferred.length > 0
        ? `The first call of each of these returns its full schema instead of running; call it again with args that match: ${deferred.join(', ')}.`
        : 'Every tool in your tools array has its full schema: call any of them directly.',
    ].join('\n');
    return { tools, context };
  }
  const tools = usable.filter((s) => !s.deferred).map(neutral);
  const deferred = usable.filter((s) => s.deferred);
  const lines = deferred.map((s) => `- ${s.name}: ${firstSentence(s.description)}`);
  const context = [
    'More tools are available than your tools array shows. To use one, fetch its schema with',
    'find_tools({"names": [...]}) or find_tools({"query": "..."}), then call it as',
    'run_tool({"name": "<tool>", "args": {...}}). Available tools:',
    ...lines,
  ].join('\n');
  return { tools, context };
}

function firstSentence(text: string): string {
  const m = text.match(/^.*?[.!?](\s|$)/);
  return (m ? m[0] : text).trim();
}
