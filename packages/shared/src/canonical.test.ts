import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callKey, canonicalJson } from './canonical.js';

/** The first implementation: JSON.stringify of a copy with sorted keys (what keys in Redis were made with). */
function reference(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) {
        const x = (v as Record<string, unknown>)[key];
        if (x !== undefined) Object.defineProperty(out, key, { value: sortKeys(x), enumerable: true, writable: true });
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(value));
}

describe('canonicalJson', () => {
  it('writes the same text as JSON.stringify of a sorted copy, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 2_000 },
    );
  });

  it('sorts keys at every level, and so ignores their order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 1 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[1,{"y":1,"z":0}]},"b":1}',
    );
    expect(callKey('t', { a: 1, b: 2 })).toBe(callKey('t', { b: 2, a: 1 }));
  });

  it('leaves out undefined properties and writes undefined array items as null, as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1], c: Number.NaN })).toBe('{"b":[null,1],"c":null}');
    expect(canonicalJson({ ['__proto__']: 1 })).toBe(reference({ ['__proto__']: 1 }));
  });
});

describe('callKey', () => {
  it('is the tool name and the first 32 hex digits of the sha256 of the canonical args (keys stored in Redis stay valid across versions)', () => {
    expect(callKey('read_files', { b: 2, a: [1, { d: 'x', c: null }] })).toBe(
      'read_files|447ad8b2e4e727f5366dbf09eef53ac1',
    );
  });
});
