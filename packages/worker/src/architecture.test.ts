import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, layerChecker, MAX_FUNCTION_LINES } from '../../../test/support/layers.js';

// ARCHITECTURE.md "The worker's folders": each file's layer by its folder; imports only point down.
const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Lowest first. */
const LAYERS: readonly (readonly string[])[] = [
  ['support'],
  ['net'],
  ['sandbox'],
  ['handlers', 'mcp'],
  ['registry.ts', 'metrics.ts'],
  ['execute-job.ts'],
  ['queue'],
  ['app'],
  ['index.ts'],
];
/** The queue's transport: only queue/ and app/ talk to Redis or BullMQ. */
const QUEUE_PACKAGES = ['bullmq', 'ioredis', '@tool-dispatch/shared/redis'];

const checker = layerChecker({ src: SRC, layers: LAYERS, standAlone: new Set(LAYERS.flat()) });

describe('the worker layers', () => {
  it('has no import circle', () => {
    expect(cycles(checker.graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('imports only from lower layers', () => {
    expect(checker.violations()).toEqual([]);
  });

  it('keeps bullmq, ioredis and the /redis door in queue/ and app/', () => {
    expect(checker.packageImportsOutside(QUEUE_PACKAGES, new Set(['queue', 'app']))).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines unless a comment says why`, () => {
    expect(checker.longFunctions()).toEqual([]);
  });

  describe('the checker itself', () => {
    it('finds an upward import', () => {
      expect(checker.violation('handlers/read-files.ts', 'queue/reporter.ts')).toMatch(/higher layer/);
      expect(checker.violation('queue/reporter.ts', 'support/abort.ts')).toBeUndefined();
    });
    it('finds handlers and mcp importing each other', () => {
      expect(checker.violation('handlers/read-files.ts', 'mcp/hub.ts')).toMatch(/stands alone/);
    });
    it('finds a file in no layer', () => {
      expect(checker.violation('stray.ts', 'support/abort.ts')).toMatch(/in no layer/);
    });
    it('finds Redis imported outside queue/ and app/', () => {
      const found = checker
        .packageImportsOutside(QUEUE_PACKAGES, new Set(['app']))
        .filter((p) => p.startsWith('queue/'));
      expect(found.length).toBeGreaterThan(0);
    });
  });
});
