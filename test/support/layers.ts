// The layer checker each package's `src/architecture.test.ts` runs over its own table
// (ARCHITECTURE.md "Layers"): each file's layer by its top folder (or root file), imports only
// pointing down, no circle, functions of one screen. Test files and contract suites are left
// out: they wire anything.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** STYLE.md "small functions": one screen. A longer one says why on the line above it: `// long: <why>`. */
export const MAX_FUNCTION_LINES = 60;
/** A source file's budget; a longer one says why on its first line: `// long-file: <why>`. */
export const FILE_BUDGET_LINES = 400;
/** No source file is longer than this, reason or not. */
export const MAX_FILE_LINES = 450;

export interface LayerTable {
  /** The package's src directory. */
  readonly src: string;
  /** Lowest first: each entry the top folders and root files of one layer. */
  readonly layers: readonly (readonly string[])[];
  /**
   * Folders of one layer that stand alone (a seam each: neither imports the other). Folders of one
   * layer not listed here may import each other (handlers beside mcp, say), circles aside.
   */
  readonly standAlone?: ReadonlySet<string>;
  /** Why an import breaks a rule beyond the layers (a seam's implementation, say), or undefined. */
  readonly extra?: (from: string, to: string) => string | undefined;
}

export interface Imports {
  /** Files of src this file imports, relative to src. */
  local: string[];
  /** Package specifiers it imports. */
  packages: string[];
}

/** A package's layer checker: its files, import graph and the checks over them. */
export interface LayerChecker {
  readonly files: readonly string[];
  readonly graph: ReadonlyMap<string, readonly string[]>;
  importsOf(file: string): Imports;
  top(file: string): string;
  layerOf(file: string): number;
  /** Why an import from `from` to `to` breaks the layering, or undefined. */
  violation(from: string, to: string): string | undefined;
  /** Every import that breaks the layering, said. */
  violations(): string[];
  /** `file imports pkg` for each file outside `allowedTops` importing one of `packages`. */
  packageImportsOutside(packages: readonly string[], allowedTops: ReadonlySet<string>): string[];
  /** Functions over MAX_FUNCTION_LINES without a `// long:` reason. */
  longFunctions(): string[];
}

/** The `.ts` files under `dir`, relative to `root`, tests and contract suites left out. */
export function sourceFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(root, p);
    return /\.ts$/.test(e.name) && !/\.(test|contract)\.ts$/.test(e.name) ? [path.relative(root, p)] : [];
  });
}

export function layerChecker(table: LayerTable): LayerChecker {
  const { src, layers } = table;
  const importsOf = (file: string): Imports => {
    const text = readFileSync(path.join(src, file), 'utf8');
    const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'/g)].map((m) => m[1] as string);
    const local = specs
      .filter((s) => s.startsWith('.'))
      .map((s) => path.relative(src, path.resolve(src, path.dirname(file), s)).replace(/\.js$/, '.ts'));
    return { local, packages: specs.filter((s) => !s.startsWith('.')) };
  };
  const top = (file: string) => file.split(path.sep)[0] as string;
  const layerOf = (file: string) => layers.findIndex((names) => names.includes(top(file)));
  const violation = (from: string, to: string): string | undefined => {
    const a = layerOf(from);
    const b = layerOf(to);
    if (a < 0) return `${from} is in no layer`;
    if (b < 0) return `${to} is in no layer`;
    if (top(from) === top(to)) return undefined;
    if (b > a) return `${from} (layer ${a}) imports ${to} (layer ${b}), a higher layer`;
    if (b === a && (table.standAlone?.has(top(from)) || table.standAlone?.has(top(to))))
      return `${from} imports ${to}: two folders of one layer (each seam stands alone)`;
    return table.extra?.(from, to);
  };
  const files = sourceFiles(src);
  const graph = new Map(files.map((f) => [f, importsOf(f).local]));
  return {
    files,
    graph,
    importsOf,
    top,
    layerOf,
    violation,
    violations: () =>
      [...graph].flatMap(([from, tos]) => tos.map((to) => violation(from, to)).filter((v) => v !== undefined)),
    packageImportsOutside: (packages, allowedTops) =>
      files
        .filter((f) => !allowedTops.has(top(f)))
        .flatMap((f) =>
          importsOf(f)
            .packages.filter((p) => packages.includes(p))
            .map((p) => `${f} imports ${p}`),
        ),
    longFunctions: () => files.flatMap((f) => longFunctionsOf(src, f)),
  };
}

/** Each import circle of `graph`, as the path round it. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

/** Functions of `file` (under `src`) over MAX_FUNCTION_LINES without a `// long: <why>` on the line above. */
export function longFunctionsOf(src: string, file: string): string[] {
  const text = readFileSync(path.join(src, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split('\n');
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const length = source.getLineAndCharacterOfPosition(node.getEnd()).line - start + 1;
      const said = /\/\/ long: \S/.test(lines[start - 1] ?? '');
      const name = node.name?.getText(source) ?? '(anonymous)';
      if (length > MAX_FUNCTION_LINES && !said) found.push(`${file}:${start + 1} ${name} has ${length} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Files over the budget: over FILE_BUDGET_LINES without `// long-file: <why>` as their first line,
 * or over MAX_FILE_LINES at all. `text` by file name (tests included: they are read too).
 */
export function overBudget(texts: ReadonlyMap<string, string>): string[] {
  const found: string[] = [];
  for (const [file, text] of texts) {
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
    const said = /^\/\/ long-file: \S/.test(text);
    if (lines > MAX_FILE_LINES) found.push(`${file} has ${lines} lines (no file may pass ${MAX_FILE_LINES})`);
    else if (lines > FILE_BUDGET_LINES && !said)
      found.push(`${file} has ${lines} lines, over ${FILE_BUDGET_LINES} with no \`// long-file: <why>\` first line`);
  }
  return found;
}
