import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so equal values serialise equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) Object.defineProperty(out, key, { value: sortKeys(v), enumerable: true, writable: true });
    }
    return out;
  }
  return value;
}

/** sha256 (hex, first 32 chars) of the canonical JSON of a value. */
export function hashCanonical(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);
}

/** The dedupe / cache key of a call: resolved tool name + hash of its canonical args. */
export function callKey(name: string, args: unknown): string {
  return `${name}|${hashCanonical(args)}`;
}
