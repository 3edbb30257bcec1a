import type { ToolDefinition, ToolSpec } from '@tool-dispatch/shared';
import { definitionOf } from './catalog.js';

const MAX_QUERY_RESULTS = 20;

/**
 * find_tools({query?, names?}): the definitions asked for by exact name, then the best matches of
 * the query's words against names and descriptions. Only tools that can run are offered.
 */
export function findTools(
  available: readonly ToolSpec[],
  args: { query?: unknown; names?: unknown },
): { tools: ToolDefinition[]; missing?: string[] } {
  const byName = new Map(available.filter((s) => s.name !== 'run_tool').map((s) => [s.name, s]));
  const picked = new Map<string, ToolSpec>();
  const missing: string[] = [];
  if (Array.isArray(args.names)) {
    for (const n of args.names) {
      if (typeof n !== 'string') continue;
      const s = byName.get(n);
      if (s) picked.set(n, s);
      else missing.push(n);
    }
  }
  if (typeof args.query === 'string' && args.query.trim()) {
    const words = args.query
      .toLowerCase()
      .split(/[^a-z0-9_]+/)
      .filter(Boolean);
    const scored = [...byName.values()]
      .map((s) => ({ s, score: scoreOf(s, words) }))
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score || a.s.name.localeCompare(b.s.name))
      .slice(0, MAX_QUERY_RESULTS);
    for (const { s } of scored) picked.set(s.name, s);
  }
  if (!Array.isArray(args.names) && (typeof args.query !== 'string' || !args.query.trim())) {
    for (const s of byName.values()) picked.set(s.name, s);
  }
  const tools = [...picked.values()].map(definitionOf);
  return missing.length ? { tools, missing } : { tools };
}

function scoreOf(spec: ToolSpec, words: readonly string[]): number {
  const name = spec.name.toLowerCase();
  const text = `${name} ${name.replace(/_/g, ' ')} ${spec.description.toLowerCase()}`;
  let score = 0;
  for (const w of words) {
    if (name === w) score += 10;
    else if (name.includes(w)) score += 4;
    else if (text.includes(w)) score += 1;
  }
  return score;
}
