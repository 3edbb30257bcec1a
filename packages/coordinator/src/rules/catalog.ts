import {
  ALWAYS_SERIAL,
  type AnnouncedTool,
  CACHEABLE_TOOLS,
  CONCURRENT_BUILTINS,
  COORDINATOR_DEFINITIONS,
  DEFAULT_TOOL_TIMEOUT_MS,
  INTERACTIVE_DEFINITIONS,
  SHIPPED_DEFINITIONS,
  schemaProblem,
  type ToolDefinition,
  type ToolKind,
  type ToolSpec,
  UNSHIPPED_DEFINITIONS,
} from '@tool-dispatch/shared';

/** Tools whose every call is a new side effect: never deduped (DESIGN.md pass 1 step 3). */
const NEVER_DEDUPED = new Set(['run_command', 'edit_file']);
/** Tools the model always has schemas for and may call directly under every provider. */
export const ALWAYS_LOADED = ['find_tools'] as const;

const isIn = (list: readonly string[], name: string) => list.includes(name);

/** Resolves a definition's flags by DESIGN.md's rules (the forced-serial ones win over the definition). */
export function resolveSpec(def: ToolDefinition, kind: ToolKind): ToolSpec {
  const interactive = def.interactive === true;
  let concurrency: ToolSpec['concurrency'];
  if (isIn(ALWAYS_SERIAL, def.name) || interactive || kind === 'mcp') concurrency = 'serial';
  else if (kind === 'builtin') concurrency = isIn(CONCURRENT_BUILTINS, def.name) ? 'concurrent' : 'serial';
  else concurrency = def.concurrency === 'concurrent' ? 'concurrent' : 'serial';
  const builtinConfirm = kind === 'builtin' && (isIn(ALWAYS_SERIAL, def.name) || def.name === 'http_request');
  return {
    name: def.name,
    description: def.description,
    parameters: def.parameters,
    kind,
    concurrency,
    confirm: builtinConfirm || def.confirm === true,
    deferred: !(def.name === 'find_tools' || def.name === 'run_tool' || kind === 'client'),
    cacheable: kind === 'builtin' && isIn(CACHEABLE_TOOLS, def.name),
    dedupe: !(NEVER_DEDUPED.has(def.name) || interactive || def.name.startsWith('generate_')),
    interactive,
    timeoutMs: def.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
  };
}

/** The definition a client sees (API.md ToolDefinition). */
export function definitionOf(spec: ToolSpec): ToolDefinition {
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    concurrency: spec.concurrency,
    confirm: spec.confirm,
    ...(spec.interactive ? { interactive: true } : {}),
  };
}

/** Why a definition cannot be registered, or undefined when it can. */
export function definitionProblem(def: unknown): string | undefined {
  if (!def || typeof def !== 'object') return 'a tool definition must be an object';
  const d = def as Record<string, unknown>;
  if (typeof d.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(d.name))
    return `tool name ${JSON.stringify(d.name)} must match [A-Za-z_][A-Za-z0-9_.-]{0,63}`;
  if (d.name === 'run_tool' || d.name === 'find_tools') return `${d.name} is a built-in and cannot be redefined`;
  if (typeof d.description !== 'string') return `tool ${d.name}: description must be a string`;
  const schema = schemaProblem(d.parameters);
  if (schema) return `tool ${d.name}: ${schema}`;
  if (d.concurrency !== undefined && d.concurrency !== 'concurrent' && d.concurrency !== 'serial')
    return `tool ${d.name}: concurrency must be "concurrent" or "serial"`;
  if (d.confirm !== undefined && typeof d.confirm !== 'boolean') return `tool ${d.name}: confirm must be a boolean`;
  if (d.interactive !== undefined && typeof d.interactive !== 'boolean')
    return `tool ${d.name}: interactive must be a boolean`;
  return undefined;
}

/** A catalog entry for an MCP server's tool as a worker announced it (API.md "MCP servers"). */
export function announcedSpec(t: AnnouncedTool): ToolSpec {
  const def: ToolDefinition = {
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    confirm: t.confirm,
  };
  if (t.timeoutMs !== undefined) def.timeoutMs = t.timeoutMs;
  return {
    ...resolveSpec(def, 'mcp'),
    dedupe: t.dedupe,
    server: t.server,
    ...(t.annotations ? { annotations: t.annotations } : {}),
  };
}

/** All tool definitions known to the system: built-ins, then registered ones (user, MCP). */
export class Catalog {
  private readonly specs = new Map<string, ToolSpec>();
  /** The announced MCP tools last adopted (compared by identity: an executor hands out the same array while nothing changed). */
  private adopted: readonly AnnouncedTool[] = [];
  private readonly refused = new Set<string>();

  /**
   * Takes the MCP tools the workers announce in place of those taken before: a tool that left is
   * gone (`unknown`), a new one listed. One whose name a built-in or user tool has, or whose
   * definition is not one, is refused; `log` says so once per tool and reason.
   */
  adopt(tools: readonly AnnouncedTool[], log: (line: string) => void = () => {}): void {
    if (tools === this.adopted) return;
    this.adopted = tools;
    for (const [name, spec] of this.specs) if (spec.kind === 'mcp') this.specs.delete(name);
    for (const t of tools) {
      const taken = this.specs.get(t.name);
      const problem = taken
        ? `the name is taken by the ${taken.kind === 'mcp' ? `MCP server ${taken.server}'s tool` : `${taken.kind} tool`}`
        : definitionProblem({ name: t.name, description: t.description, parameters: t.parameters });
      if (problem) {
        const line = `catalog: MCP server ${t.server}'s tool ${JSON.stringify(t.tool)} (${t.name}) refused: ${problem}`;
        if (!this.refused.has(line)) log(line);
        this.refused.add(line);
        continue;
      }
      this.specs.set(t.name, announcedSpec(t));
    }
  }

  constructor() {
    for (const def of [
      ...SHIPPED_DEFINITIONS,
      ...COORDINATOR_DEFINITIONS,
      ...INTERACTIVE_DEFINITIONS,
      ...UNSHIPPED_DEFINITIONS,
    ])
      this.specs.set(def.name, resolveSpec(def, 'builtin'));
  }

  /** Registers (or replaces) a user or MCP tool; built-ins cannot be replaced. */
  register(def: ToolDefinition, kind: Exclude<ToolKind, 'builtin' | 'client'> = 'user'): ToolSpec {
    const problem = definitionProblem(def);
    if (problem) throw new Error(problem);
    if (this.specs.get(def.name)?.kind === 'builtin') throw new Error(`${def.name} is a built-in tool`);
    const spec = resolveSpec(def, kind);
    this.specs.set(def.name, spec);
    return spec;
  }

  get(name: string): ToolSpec | undefined {
    return this.specs.get(name);
  }

  all(): ToolSpec[] {
    return [...this.specs.values()];
  }
}

/** A session's view: the catalog plus its client tools (which shadow nothing built in). */
export function sessionSpecs(catalog: Catalog, clientTools: readonly ToolDefinition[]): Map<string, ToolSpec> {
  const out = new Map<string, ToolSpec>();
  for (const s of catalog.all()) out.set(s.name, s);
  for (const def of clientTools) if (!out.has(def.name)) out.set(def.name, resolveSpec(def, 'client'));
  return out;
}
