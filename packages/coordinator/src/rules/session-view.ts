import type { NeutralTool, ToolDefinition, ToolSpec } from '@tool-dispatch/shared';
import type { ToolSearch, ToolsView } from '../model.js';

export const CLAUDE_CODE = 'claude-code';
/** The provider of sessions MCP clients make through `/mcp` (API.md v1.2): every tool loaded and fetched. */
export const MCP_PROVIDER = 'mcp';

/** Providers that call every catalog tool directly (no run_tool). */
const callsDirectly = (provider: string) => provider === CLAUDE_CODE || provider === MCP_PROVIDER;

/** DESIGN.md: tools the model may call directly under a provider. */
export function loadedSet(
  provider: string,
  specs: ReadonlyMap<string, ToolSpec>,
  clientTools: readonly ToolDefinition[],
): Set<string> {
  if (callsDirectly(provider)) return new Set([...specs.keys()].filter((n) => n !== 'run_tool'));
  return new Set(['find_tools', 'run_tool', ...clientTools.map((t) => t.name)]);
}

/**
 * Which provider's loading rules a session follows: a session with Anthropic's tool search loads
 * every tool as claude-code does (called directly, no run_tool; a tool is fetched once find_tools
 * returned it).
 */
export function loadingOf(state: { provider: string; toolSearch?: ToolSearch | undefined }): string {
  return state.toolSearch === 'anthropic' ? CLAUDE_CODE : state.provider;
}

/** Schemas a new session has already been shown: find_tools and client tools (and run_tool where loaded). */
export function initiallyFetched(provider: string, clientTools: readonly ToolDefinition[]): string[] {
  const base = callsDirectly(provider) ? ['find_tools'] : ['find_tools', 'run_tool'];
  return [...base, ...clientTools.map((t) => t.name)];
}

/**
 * The schemas a round of the session treats as shown: those recorded, and under provider `mcp`
 * every tool of the catalog (MCP clients get full schemas in tools/list, so nothing answers `schema`).
 */
export function fetchedSet(
  provider: string,
  recorded: readonly string[],
  specs: ReadonlyMap<string, ToolSpec>,
): Set<string> {
  return provider === MCP_PROVIDER ? new Set([...recorded, ...specs.keys()]) : new Set(recorded);
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
 * DESIGN.md pass 1 step 5: whether something can run a tool: a handler is registered
 * (`runnable`, which holds the coordinator's own tools too), or its client or a person answers
 * it. One nothing can run is treated as having no definition: left out of `GET /v1/tools`, the
 * tools arrays, the turn context and find_tools, and a call of it is `unknown` at once.
 */
export function canRun(s: Pick<ToolSpec, 'name' | 'kind' | 'interactive'>, runnable: ReadonlySet<string>): boolean {
  return (
    s.kind === 'client' || s.interactive || s.name === 'find_tools' || s.name === 'run_tool' || runnable.has(s.name)
  );
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
  toolSearch?: ToolSearch,
): ToolsView {
  const usable = [...specs.values()].filter((s) => canRun(s, runnable));
  if (toolSearch === 'anthropic') return anthropicSearchView(usable);
  if (provider === MCP_PROVIDER) {
    const tools = usable.filter((s) => s.name !== 'run_tool').map(neutral);
    return {
      tools,
      context: `You have ${tools.length} tools, each with its full schema: call any of them directly.`,
    };
  }
  if (provider === CLAUDE_CODE) {
    const tools = usable.filter((s) => s.name !== 'run_tool').map((s) => claudeCodeTool(s, fetched));
    // Only the schemas still deferred: a fetched tool's first call runs.
    const deferred = usable.filter((s) => s.deferred && s.kind !== 'client' && !fetched.has(s.name));
    const context = [
      `You have ${tools.length} tools. find_tools and client tools are ready to call.`,
      deferred.length > 0
        ? claudeCodeDeferred(deferred)
        : 'Every tool in your tools array has its full schema: call any of them directly.',
    ].join('\n');
    return { tools, context };
  }
  const tools = usable.filter((s) => !s.deferred).map(neutral);
  const deferred = usable.filter((s) => s.deferred);
  const context = [
    'More tools are available than your tools array shows. To use one, fetch its schema with',
    'find_tools({"names": [...]}) or find_tools({"query": "..."}), then call it as',
    'run_tool({"name": "<tool>", "args": {...}}). Available tools:',
    ...deferredLines(deferred),
  ].join('\n');
  return { tools, context };
}

/**
 * A session with Anthropic's tool search (API.md v1.2): every tool with its full schema (the
 * anthropic tools array marks all but find_tools `defer_loading`, so the API keeps them out of
 * the prompt until a search returns them), and a short context saying to search.
 */
function anthropicSearchView(usable: readonly ToolSpec[]): ToolsView {
  const tools = usable
    .filter((s) => s.name !== 'run_tool')
    .map((s) => ({
      name: s.name,
      description: CLAUDE_CODE_DESCRIPTIONS[s.name] ?? s.description,
      parameters: s.parameters,
    }));
  const context = [
    `You have ${tools.length} tools; all but find_tools are loaded on demand.`,
    'Search with find_tools({"query": "<what you need>"}) (or exact "names"); the tools it returns become available: call them directly by name.',
  ].join('\n');
  return { tools, context, toolSearch: 'anthropic' };
}

/** API.md v1.2: the turn context stays under this many characters, whatever the catalog's size. */
export const CONTEXT_MAX_CHARS = 8000;
/** ... and grows by at most this many per deferred tool (a tool's line, its line break included). */
export const CONTEXT_MAX_PER_TOOL = 100;
/**
 * Past this many characters of one line per tool, MCP servers' tools are named by server (one
 * line each with its tool count and tool names), so the context stays a small part of what the
 * full definitions would cost.
 */
export const CONTEXT_LISTING_CHARS = 3000;
/** Room kept for the lines around the listing. */
const CONTEXT_HEADER_ROOM = 600;

/**
 * The listing of deferred tools, smallest detail first given up: one line per tool (name and
 * first sentence, at most CONTEXT_MAX_PER_TOOL characters); past CONTEXT_LISTING_CHARS, one line
 * per MCP server naming its tools; past what the context may hold, names only with the servers
 * counted; and last, as many lines as fit and a count of the rest, with the advice to search.
 */
export function deferredLines(deferred: readonly ToolSpec[]): string[] {
  const own = deferred.filter((s) => s.server === undefined);
  const servers = byServer(deferred);
  const perTool = deferred.map(toolLine);
  if (size(perTool) <= CONTEXT_LISTING_CHARS) return perTool;
  const search = 'Search with find_tools({"query": "<what you need>"}) to get the right one.';
  const grouped = [
    ...own.map(toolLine),
    ...[...servers].map(([server, tools]) => serverLine(server, tools, true)),
    search,
  ];
  if (size(grouped) <= CONTEXT_MAX_CHARS - CONTEXT_HEADER_ROOM) return grouped;
  const counted = [
    ...own.map((s) => `- ${s.name}`.slice(0, CONTEXT_MAX_PER_TOOL - 1)),
    ...[...servers].map(([server, tools]) => serverLine(server, tools, false)),
    search,
  ];
  return fitting(counted, search);
}

/** The lines that fit in the context's room, then how many did not and the advice to search. */
function fitting(lines: readonly string[], search: string): string[] {
  if (size(lines) <= CONTEXT_MAX_CHARS - CONTEXT_HEADER_ROOM) return [...lines];
  const room = CONTEXT_MAX_CHARS - CONTEXT_HEADER_ROOM - 200;
  const kept: string[] = [];
  let used = 0;
  for (const line of lines.slice(0, -1)) {
    if (used + line.length + 1 > room) break;
    kept.push(line);
    used += line.length + 1;
  }
  return [...kept, `- … and ${lines.length - 1 - kept.length} more tools and servers.`, search];
}

/** The characters lines take joined by line breaks (and the break before them). */
const size = (lines: readonly string[]) => lines.reduce((n, l) => n + l.length + 1, 0);

/** One tool's line: its name and first sentence, cut to CONTEXT_MAX_PER_TOOL characters with its line break. */
function toolLine(s: ToolSpec): string {
  const line = `- ${s.name}: ${firstSentence(s.description)}`;
  return line.length < CONTEXT_MAX_PER_TOOL ? line : `${line.slice(0, CONTEXT_MAX_PER_TOOL - 2).trimEnd()}…`;
}

/** One MCP server's line: how many tools, their prefix, and (`named`) the tools' own names. */
function serverLine(server: string, tools: readonly ToolSpec[], named: boolean): string {
  if (named && tools.length === 1) return toolLine(tools[0] as ToolSpec);
  const prefix = `mcp__${server}__`;
  const head = `- MCP server ${server}: ${tools.length} tool${tools.length === 1 ? '' : 's'} named ${prefix}<tool>`;
  if (!named) return `${head}.`;
  const short = tools.map((s) => (s.name.startsWith(prefix) ? s.name.slice(prefix.length) : s.name));
  return `${head}: ${short.join(', ')}.`;
}

function byServer(deferred: readonly ToolSpec[]): Map<string, ToolSpec[]> {
  const out = new Map<string, ToolSpec[]>();
  for (const s of deferred) {
    if (s.server === undefined) continue;
    const list = out.get(s.server) ?? [];
    list.push(s);
    out.set(s.server, list);
  }
  return out;
}

/** claude-code's line of tools whose first call answers their schema: their names, or by server past the listing's room. */
function claudeCodeDeferred(deferred: readonly ToolSpec[]): string {
  const lead =
    'The first call of each of these returns its full schema instead of running; call it again with args that match';
  const names = deferred.map((s) => s.name).join(', ');
  if (names.length <= CONTEXT_LISTING_CHARS) return `${lead}: ${names}.`;
  const own = deferred.filter((s) => s.server === undefined).map((s) => s.name);
  const groups = [...byServer(deferred)].map(([server, tools]) => `mcp__${server}__* (${tools.length} tools)`);
  const listed = [...own, ...groups].join(', ');
  const text = `${lead} (find_tools finds them by what they do): ${listed}.`;
  return text.length <= CONTEXT_MAX_CHARS - CONTEXT_HEADER_ROOM
    ? text
    : `${text.slice(0, CONTEXT_MAX_CHARS - CONTEXT_HEADER_ROOM - 80)}… Search with find_tools for the rest.`;
}

function firstSentence(text: string): string {
  const m = text.match(/^.*?[.!?](\s|$)/);
  return (m ? m[0] : text).replace(/\s+/g, ' ').trim();
}
