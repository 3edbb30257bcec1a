import type { CallResult, ToolDefinition, ToolSpec } from '@tool-dispatch/shared';
import MiniSearch from 'minisearch';
import { definitionOf } from './catalog.js';

/** find_tools `limit` (API.md v1.2): 1–20, default 5. */
export const FIND_TOOLS_DEFAULT_LIMIT = 5;
export const FIND_TOOLS_MAX_LIMIT = 20;

/**
 * find_tools({query?, limit?, names?}): the definitions asked for by exact name, then the best
 * matches of the query (ranked by `ToolIndex`), at most `limit`. Only the tools in `available`
 * (those that can run) are offered; run_tool never is.
 */
export function findTools(
  available: readonly ToolSpec[],
  args: { query?: unknown; names?: unknown; limit?: unknown },
): { tools: ToolDefinition[]; missing?: string[] } {
  const offered = available.filter((s) => s.name !== 'run_tool');
  const byName = new Map(offered.map((s) => [s.name, s]));
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
  const query = typeof args.query === 'string' ? args.query.trim() : '';
  if (query) {
    const limit = typeof args.limit === 'number' ? args.limit : FIND_TOOLS_DEFAULT_LIMIT;
    for (const name of indexOf(offered).search(query, limit)) picked.set(name, byName.get(name) as ToolSpec);
  }
  if (!Array.isArray(args.names) && !query) {
    for (const s of offered) picked.set(s.name, s);
  }
  const tools = [...picked.values()].map(definitionOf);
  return missing.length ? { tools, missing } : { tools };
}

/** The ranking over a fixed set of tools: BM25+ (MiniSearch) over names, descriptions and parameters. */
export class ToolIndex {
  private readonly search_: MiniSearch<IndexedTool>;
  private readonly names: ReadonlySet<string>;
  /** Names by their lower-case spelling, for a query word that names a tool. */
  private readonly lowerNames: ReadonlyMap<string, string>;

  constructor(specs: readonly ToolSpec[]) {
    const docs = [...specs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(indexedOf);
    this.search_ = new MiniSearch<IndexedTool>({
      idField: 'name',
      fields: ['words', 'description', 'params'],
      tokenize: tokenizeText,
      processTerm: termOf,
      searchOptions: {
        boost: { words: 5, description: 1.5, params: 1 },
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 6 ? 0.2 : false),
        combineWith: 'OR',
        weights: { fuzzy: 0.3, prefix: 0.5 },
      },
    });
    this.search_.addAll(docs);
    this.names = new Set(docs.map((d) => d.name));
    const lower = new Map<string, string>();
    for (const d of docs) if (!lower.has(d.name.toLowerCase())) lower.set(d.name.toLowerCase(), d.name);
    this.lowerNames = lower;
  }

  /** The names of the best `limit` matches, best first; a tool named by the query or a word of it leads. */
  search(query: string, limit: number): string[] {
    const first = this.namedIn(query);
    const own = ownTerms(query);
    const added = [...own].flatMap((t) => SYNONYMS[t] ?? []).filter((t) => !own.has(t));
    const ranked = this.search_
      .search(added.length ? `${query} ${added.join(' ')}` : query, {
        boostTerm: (term) => (added.includes(term) ? SYNONYM_WEIGHT : 1),
      })
      .filter((r) => r.id !== 'find_tools')
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => String(r.id));
    const out = [...new Set([...first, ...ranked])];
    return out.slice(0, limit);
  }

  /** Tools the query names: the whole query, then each word of it (as spelled, else case-insensitively). */
  private namedIn(query: string): string[] {
    const words = [query, ...query.split(/[\s,;:()'"`[\]{}<>!?]+/)].map((w) => w.replace(/^[.]+|[.]+$/g, ''));
    const found: string[] = [];
    for (const w of words) {
      if (!w) continue;
      const name = this.names.has(w) ? w : this.lowerNames.get(w.toLowerCase());
      if (name && !found.includes(name)) found.push(name);
    }
    return found;
  }
}

interface IndexedTool {
  name: string;
  /** The name's words: `mcp__github__list_commits` → "github list commits". */
  words: string;
  description: string;
  /** Parameter names (split into words) and their descriptions. */
  params: string;
}

function indexedOf(spec: ToolSpec): IndexedTool {
  const words = spec.name.replace(/^mcp__/, '').replace(/__/g, ' ');
  return { name: spec.name, words, description: spec.description, params: paramsText(spec.parameters) };
}

/** Top-level parameter names and descriptions (and enum values), the text a search may match. */
function paramsText(schema: Record<string, unknown>): string {
  const props = schema.properties;
  if (!props || typeof props !== 'object') return '';
  const parts: string[] = [];
  for (const [name, p] of Object.entries(props as Record<string, unknown>)) {
    parts.push(name);
    if (p && typeof p === 'object') {
      const d = (p as { description?: unknown }).description;
      if (typeof d === 'string') parts.push(d);
    }
  }
  return parts.join(' ');
}

/**
 * Words a request uses for what tool texts say otherwise (each a stemmed term → terms added to the
 * query, weighted below the query's own words): the vocabulary gap between how a model asks and
 * how a tool describes itself.
 */
const SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  folder: ['directory'],
  hierarchy: ['tree'],
  structure: ['tree'],
  pr: ['pull', 'request'],
  bug: ['issue'],
  ticket: ['issue'],
  checklist: ['todo'],
  task: ['todo'],
  step: ['todo'],
  scrape: ['fetch', 'page'],
  website: ['web', 'page'],
  article: ['page'],
  google: ['search', 'web'],
  internet: ['web'],
  online: ['web'],
  post: ['http', 'request'],
  api: ['http', 'request'],
  endpoint: ['http', 'request'],
  rest: ['http', 'request'],
  remember: ['memory', 'knowledge', 'entity', 'observation'],
  forget: ['delete'],
  developer: ['user'],
  account: ['user'],
  shell: ['command'],
  terminal: ['command'],
  script: ['command'],
  picture: ['image'],
  photo: ['image'],
  logo: ['image'],
  land: ['merge'],
  compress: ['gzip'],
  zip: ['gzip'],
  open: ['read', 'create'],
  view: ['read'],
  look: ['read'],
  reach: ['access', 'allowed'],
};
/** How much a synonym counts against a word of the query itself. */
const SYNONYM_WEIGHT = 0.6;

/** The query's own terms, as the index spells them. */
function ownTerms(query: string): Set<string> {
  return new Set(tokenizeText(query).flatMap((w) => termOf(w) ?? []));
}

/** Words of a text: split at anything not a letter or digit, and at camelCase humps ("to-do" is one word). */
function tokenizeText(text: string): string[] {
  return text
    .replace(/\bto-do\b/gi, 'todo')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Words too common in tool descriptions and requests to tell tools apart. */
const STOP_WORDS = new Set(
  (
    'a an and are as at be by can do does for from get give how i in into is it its me my need of on ' +
    'or our please show some that the their them then this to tool use want we what which with you your'
  ).split(' '),
);

/** A term as indexed and searched: lower-case, stop words dropped, a light English stem. */
function termOf(term: string): string | null {
  const t = term.toLowerCase();
  if (STOP_WORDS.has(t)) return null;
  return stem(t);
}

/** A light suffix stemmer (plural, -ing, -ed, -ies), enough to match "reading" with "read", "files" with "file". */
export function stem(t: string): string {
  if (t.length <= 3) return t;
  if (t.endsWith('ies') && t.length > 4) return `${t.slice(0, -3)}y`;
  if (t.endsWith('sses')) return t.slice(0, -2);
  if (t.endsWith('ing') && t.length > 5) return undouble(t.slice(0, -3));
  if (t.endsWith('ed') && t.length > 4) return undouble(t.slice(0, -2));
  if (t.endsWith('es') && /(ch|sh|x|z)es$/.test(t)) return t.slice(0, -2);
  if (t.endsWith('s') && !t.endsWith('ss') && !t.endsWith('us')) return t.slice(0, -1);
  return t;
}

function undouble(t: string): string {
  return /([b-df-hj-np-tv-z])\1$/.test(t) && !/(ll|ss|zz)$/.test(t) ? t.slice(0, -1) : t;
}

/**
 * The index of a set of tools, built once per distinct set: the catalog's specs keep their
 * identity until the catalog changes, so the same tools find the same index. A few sets are kept
 * (sessions differ by their client tools and what can run).
 */
const INDEXES = new Map<string, ToolIndex>();
const MAX_INDEXES = 16;
const keyOfSpec = new WeakMap<ToolSpec, string>();
let builds = 0;

function indexOf(specs: readonly ToolSpec[]): ToolIndex {
  const key = specs.map(specKey).join('\u0000');
  const hit = INDEXES.get(key);
  if (hit) {
    INDEXES.delete(key);
    INDEXES.set(key, hit);
    return hit;
  }
  const index = new ToolIndex(specs);
  builds += 1;
  if (INDEXES.size >= MAX_INDEXES) INDEXES.delete(INDEXES.keys().next().value as string);
  INDEXES.set(key, index);
  return index;
}

/** What a tool is to the index: its name, description and parameters (a changed definition is a new key). */
function specKey(spec: ToolSpec): string {
  let key = keyOfSpec.get(spec);
  if (key === undefined) {
    key = `${spec.name}\u0001${spec.description}\u0001${JSON.stringify(spec.parameters)}`;
    keyOfSpec.set(spec, key);
  }
  return key;
}

/** How many indexes were built (tests: the index is not rebuilt per call). */
export function indexBuilds(): number {
  return builds;
}

/**
 * The schemas a round's find_tools calls fetched for the session (DESIGN.md "Deferred schemas"):
 * those of each find_tools whose result is `ok`, i.e. it ran and its answer is what the round
 * returns. One cancelled, or never started, fetches nothing.
 */
export function fetchedByFindTools(
  calls: readonly { name: string }[],
  results: readonly Pick<CallResult, 'status' | 'output'>[],
): string[] {
  const names = new Set<string>();
  for (const [i, call] of calls.entries()) {
    const result = results[i];
    if (call.name !== 'find_tools' || result?.status !== 'ok') continue;
    const tools = (result.output as { tools?: unknown } | undefined)?.tools;
    if (!Array.isArray(tools)) continue;
    for (const t of tools)
      if (typeof (t as { name?: unknown })?.name === 'string') names.add((t as { name: string }).name);
  }
  return [...names];
}
