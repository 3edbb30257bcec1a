import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, layerChecker, MAX_FUNCTION_LINES } from '../../../test/support/layers.js';

// ARCHITECTURE.md "Layers": each file's layer by its folder; imports only point down (or stay
// inside one seam's folder). Test files and contract suites are left out: they wire anything.
const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Lowest first. A seam's folder (store, events, confirm, inputs, ledger, limits, executors) is one layer of its own. */
const LAYERS: readonly (readonly string[])[] = [
  ['support', 'model.ts', 'request-error.ts'],
  ['rules'],
  ['store', 'events', 'confirm', 'inputs', 'inbox', 'ledger', 'limits', 'executors'],
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
  'inbox/inbox-feed.ts',
  'ledger/round-ledger.ts',
  'limits/limits.ts',
  'executors/call-progress.ts',
]);
/** Packages only app/ imports (implementations and the worker's handlers). */
const APP_ONLY_PACKAGES = ['@tool-dispatch/worker'];

const checker = layerChecker({ src: SRC, layers: LAYERS, standAlone: new Set(LAYERS.flat()), extra: seamRule });
const { files, graph, importsOf, top, violation } = checker;

/** A seam's implementation is picked in app/ only: the layers above see its interface. */
function seamRule(from: string, to: string): string | undefined {
  const fromTop = from.split(path.sep)[0] as string;
  const toTop = to.split(path.sep)[0] as string;
  if (SEAMS.has(toTop) && fromTop !== 'app' && fromTop !== 'index.ts' && !SEAM_INTERFACES.has(to))
    return `${from} imports ${to}, an implementation of a seam: only app/ picks implementations`;
  return undefined;
}

describe('the coordinator layers', () => {
  it('has no import circle', () => {
    expect(cycles(graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('imports only from lower layers, and seams only through their interfaces', () => {
    expect(checker.violations()).toEqual([]);
  });

  it('imports the worker package from app/ only', () => {
    expect(checker.packageImportsOutside(APP_ONLY_PACKAGES, new Set(['app']))).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines unless a comment says why`, () => {
    expect(checker.longFunctions()).toEqual([]);
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
