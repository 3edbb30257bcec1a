import * as crypto from 'node:crypto';

/**
 * JSON with object keys sorted at every level, so equal values serialise equally. Written in one
 * pass (no sorted copy of the value is built); the same text as `JSON.stringify` of such a copy.
 */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'undefined';
}

/** The canonical text of a value, or undefined where JSON leaves a property out (undefined, functions, symbols). */
function write(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') {
    return typeof value === 'function' || typeof value === 'symbol' ? undefined : JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? '' : ','}${write(value[i]) ?? 'null'}`;
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const key of sortedKeys(record)) {
    const text = write(record[key]);
    if (text === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${text}`;
    first = false;
  }
  return `${out}}`;
}

/**
 * Keys in the order JSON.stringify lists them on an object built with the keys sorted: integer
 * keys ("0", "12": array indices) first in numeric order, as JavaScript objects keep them (and
 * as `Object.keys` gives them), then the others sorted.
 */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  let indices = 0;
  while (indices < keys.length && isIndex(keys[indices] as string)) indices++;
  if (indices === 0) return keys.sort();
  return [...keys.slice(0, indices), ...keys.slice(indices).sort()];
}

const isIndex = (key: string) => /^(0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1;

/**
 * sha256 as hex. Node's one-shot `crypto.hash` (20.12 and later) is about 3× cheaper than a Hash
 * object for short inputs such as a call's args; the engines field allows 20.6, hence the fallback.
 */
const sha256Hex: (text: string) => string =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');

/** sha256 (hex, first 32 chars) of the canonical JSON of a value. */
export function hashCanonical(value: unknown): string {
  return sha256Hex(canonicalJson(value)).slice(0, 32);
}

/** The dedupe / cache key of a call: resolved tool name + hash of its canonical args. */
export function callKey(name: string, args: unknown): string {
  return `${name}|${hashCanonical(args)}`;
}
