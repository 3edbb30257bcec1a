import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// ARCHITECTURE.md "Layers": each file's layer by its folder; imports only point down (or stay
// inside one seam's folder). Test files and contract suites are left out: they wire anything.
const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Lowest first. A seam's folder (store, events, confirm, inputs, ledger, executors) is one layer of its own. */
const LAYERS: readonly (readonly string[])[] = [
  ['support', 'model.ts', 'request-error.ts'],
  ['rules'],
  ['store', 'events', 'confirm', 'inputs', 'ledger', 'executors'],
  ['passes'],
  ['round'],
  ['dispatcher.ts'],
  ['engine.ts'],
  ['http'],
  ['app'],
  ['index.ts'],
];
const SEAMS = new Set(LAYERS[2]);
/** The files of a seam the layers above may see: its interface (implementations are picked in app/). */
const SEAM_INTERFACES = new Set([
  'store/store.ts',
  'events/event-bus.ts',
  'confirm/confirm-hub.ts',
  'inputs/input-hub.ts',
  'ledger/round-ledger.ts',
]);
/** Packages only app/ imports (implementations and the worker's handlers). */
const APP_ONLY_PACKAGES = ['@tool-dispatch/worker'];

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.ts$/.test(e.name) && !/\.(test|contract)\.ts$/.test(e.name) ? [path.relative(SRC, p)] : [];
  });
}

function importsOf(file: string): { local: string[]; packages: string[] } {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'/g)].map((m) => m[1] as string);
  const local = specs
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(SRC, path.resolve(SRC, path.dirname(file), s)).replace(/\.js$/, '.ts'));
  return { local, packages: specs.filter((s) => !s.startsWith('.')) };
}

const top = (file: string) => file.split(path.sep)[0] as string;
const layerOf = (file: string) => LAYERS.findIndex((names) => names.includes(top(file)));

/** Why an import from `from` to `to` breaks the layering, or undefined. */
function violation(from: string, to: string): string | undefined {
  const a = layerOf(from);
  const b = layerOf(to);
  if (a < 0) return `${from} is in no layer`;
  if (b < 0) return `${to} is in no layer`;
  if (top(from) === top(to)) return undefined;
  if (b > a) return `${from} (layer ${a}) imports ${to} (layer ${b}), a higher layer`;
  if (b === a) return `${from} imports ${to}: two folders of one layer (each seam stands alone)`;
  if (SEAMS.has(top(to)) && top(from) !== 'app' && top(from) !== 'index.ts' && !SEAM_INTERFACES.has(to))
    return `${from} imports ${to}, an implementation of a seam: only app/ picks implementations`;
  return undefined;
}

function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
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

/** STYLE.md "small functions": one screen. A longer one says why on the line above it: `// long: <why>`. */
const MAX_FUNCTION_LINES = 60;

function longFunctions(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
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

const files = sourceFiles();
const graph = new Map(files.map((f) => [f, importsOf(f).local]));

describe('the coordinator layers', () => {
  it('has no import circle', () => {
    expect(cycles(graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('imports only from lower layers, and seams only through their interfaces', () => {
    const problems = [...graph].flatMap(([from, tos]) => tos.map((to) => violation(from, to)).filter(Boolean));
    expect(problems).toEqual([]);
  });

  it('imports the worker package from app/ only', () => {
    const problems = files
      .filter((f) => top(f) !== 'app')
      .flatMap((f) =>
        importsOf(f)
          .packages.filter((p) => APP_ONLY_PACKAGES.includes(p))
          .map((p) => `${f} imports ${p}`),
      );
    expect(problems).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines unless a comment says why`, () => {
    expect(files.flatMap(longFunctions)).toEqual([]);
  });

  it('keeps Redis out of the rules, passes and rounds: only seams, support and app/ import the /redis door', () => {
    const pure = new Set(['model.ts', 'request-error.ts', 'rules', 'passes', 'round', 'engine.ts', 'dispatcher.ts']);
    const problems = files
      .filter((f) => pure.has(top(f)))
      .flatMap((f) =>
        importsOf(f)
          .packages.filter((p) => p === '@tool-dispatch/shared/redis' || p === 'ioredis' || p === 'bullmq')
          .map((p) => `${f} imports ${p}`),
      );
    expect(problems).toEqual([]);
  });

  describe('the checker itself', () => {
    it('finds an upward import', () => {
      expect(violation('rules/dedupe.ts', 'store/store.ts')).toMatch(/higher layer/);
    });
    it('finds an import of a seam implementation outside app/', () => {
      expect(violation('passes/commit.ts', 'store/memory.ts')).toMatch(/only app\//);
      expect(violation('app/embedded.ts', 'store/memory.ts')).toBeUndefined();
    });
    it('finds one seam importing another', () => {
      expect(violation('store/redis.ts', 'events/redis.ts')).toMatch(/each seam stands alone/);
    });
    it('finds a circle', () => {
      expect(
        cycles(
          new Map([
            ['a', ['b']],
            ['b', ['a']],
          ]),
        ),
      ).toEqual([['a', 'b', 'a']]);
    });
  });
});
