import { MAX_ARGS_BYTES, MAX_ARGS_DEPTH } from '@tool-dispatch/shared';
import type { NormalCall, OtherItem } from '../model.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads args that are an object or a JSON string of one (OpenAI style). */
export function readArgs(raw: unknown): { args: Record<string, unknown> } | { problem: string } {
  if (raw === undefined || raw === null || raw === '') return { args: {} };
  let value = raw;
  if (typeof raw === 'string') {
    if (raw.length > MAX_ARGS_BYTES)
      return { problem: `args are ${raw.length} bytes; the limit is ${MAX_ARGS_BYTES} bytes` };
    try {
      value = JSON.parse(raw);
    } catch (e) {
      return { problem: `args are not valid JSON (${e instanceof Error ? e.message : String(e)})` };
    }
  }
  if (!isObject(value)) return { problem: `args must be a JSON object, got ${describeType(value)}` };
  const problem = argsShapeProblem(value);
  return problem ? { problem } : { args: value };
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

/**
 * Size, depth and prototype-key limits on args (README "Limits"). One walk checks depth and keys
 * and bounds the JSON's size from above; the JSON is written out to count its bytes exactly only
 * when that bound passes the limit, or for a value whose JSON the walk cannot bound (a toJSON).
 */
export function argsShapeProblem(args: Record<string, unknown>): string | undefined {
  const walk: ShapeWalk = { bound: 0, forbidden: undefined, exact: false };
  if (!scan(args, 1, walk)) return `args are nested deeper than ${MAX_ARGS_DEPTH} levels`;
  if (walk.forbidden) return `args contain the forbidden key "${walk.forbidden}"`;
  if (walk.bound <= MAX_ARGS_BYTES && !walk.exact) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(args));
  if (bytes > MAX_ARGS_BYTES) return `args are ${bytes} bytes; the limit is ${MAX_ARGS_BYTES} bytes`;
  return undefined;
}

interface ShapeWalk {
  /** At least the UTF-8 bytes of the JSON walked so far. */
  bound: number;
  /** The first forbidden key met, depth first. */
  forbidden: string | undefined;
  /** Met a value the bound cannot cover (a class instance, a function, a bigint): count the bytes exactly. */
  exact: boolean;
}

/** A JSON string's UTF-8 bytes are at most 6 per UTF-16 unit (`\u001f`, a lone surrogate) plus its quotes. */
const stringBound = (s: string) => 6 * s.length + 2;

/** Walks a container at nesting `level` (the args object is level 1); false once one is deeper than MAX_ARGS_DEPTH. */
function scan(v: object, level: number, walk: ShapeWalk): boolean {
  if (level > MAX_ARGS_DEPTH) return false;
  walk.bound += 2;
  if (Array.isArray(v)) {
    for (const x of v) {
      walk.bound += 1;
      if (!scanValue(x, level, walk)) return false;
    }
    return true;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) walk.exact = true;
  const record = v as Record<string, unknown>;
  for (const k of Object.keys(record)) {
    if (k === '__proto__') walk.forbidden ??= k;
    walk.bound += stringBound(k) + 2;
    if (!scanValue(record[k], level, walk)) return false;
  }
  return true;
}

function scanValue(x: unknown, level: number, walk: ShapeWalk): boolean {
  switch (typeof x) {
    case 'string':
      walk.bound += stringBound(x);
      return true;
    case 'number':
      walk.bound += 24; // the longest a number prints, "-2.2250738585072014e-308"
      return true;
    case 'boolean':
      walk.bound += 5;
      return true;
    case 'object':
      if (x === null) {
        walk.bound += 4;
        return true;
      }
      return scan(x, level + 1, walk);
    case 'undefined':
    case 'symbol':
      walk.bound += 4; // left out of an object, `null` in an array
      return true;
    default:
      walk.exact = true; // a function (it may be a toJSON), or a bigint: JSON.stringify decides
      return true;
  }
}

/** The `type` of each function-call shape (the native shape has none). */
const FUNCTION_CALL_TYPES: ReadonlySet<string> = new Set(['function', 'tool_use', 'function_call']);

/** What the SDKs' other items are, and whether their API wants an answer from the client for them. */
const KNOWN_OTHER_ITEMS: Readonly<Record<string, Omit<OtherItem, 'type'>>> = {
  custom: { what: 'an OpenAI custom tool call', answered: true },
  custom_tool_call: { what: 'an OpenAI Responses custom tool call', answered: true },
  text: { what: 'a text block', answered: false },
  thinking: { what: 'a thinking block', answered: false },
  redacted_thinking: { what: 'a redacted thinking block', answered: false },
  server_tool_use: { what: "a server tool use block (the model's provider runs it)", answered: false },
  reasoning: { what: 'a reasoning item', answered: false },
  message: { what: 'a message item', answered: false },
};

/** Longest `type` a message repeats; the rest is cut (the body may be megabytes). */
const MAX_SHOWN_TYPE = 64;

/**
 * An item of a model's output that is not a function call (any `type` but the three call
 * shapes'): a custom or hosted tool call, a text or thinking block, a reasoning item. It ends
 * `invalid` naming what it is; undefined for a function call.
 */
export function otherItemOf(raw: unknown): OtherItem | undefined {
  if (!isObject(raw) || typeof raw.type !== 'string' || FUNCTION_CALL_TYPES.has(raw.type)) return undefined;
  const type = raw.type.slice(0, MAX_SHOWN_TYPE);
  const known = Object.hasOwn(KNOWN_OTHER_ITEMS, raw.type) ? KNOWN_OTHER_ITEMS[raw.type] : undefined;
  if (known) return { type, ...known };
  if (raw.type.endsWith('_tool_result')) return { type, what: 'a server tool result block', answered: false };
  if (raw.type.endsWith('_call'))
    return { type, what: "a hosted tool call (the model's provider runs it)", answered: false };
  return { type, what: 'an item that is not a function call', answered: false };
}

/** The `invalid` message of an item that is not a function call (meant for the model when it is a tool call). */
export function otherItemMessage(call: NormalCall, item: OtherItem): string {
  const what = `${item.what} (type "${item.type}")`;
  if (item.answered)
    return `"${call.name}" was called as ${what}, not as a function: nothing was run. Only function tools run here; call one with a JSON object of arguments.`;
  return `This is ${what}, not a function call: nothing was run.`;
}

/** The id and name of an item that is not a function call, where it has them. */
function otherItemCall(c: Record<string, unknown>, index: number, item: OtherItem): NormalCall {
  const ownId = item.type === 'custom_tool_call' ? c.call_id : c.id;
  const custom = isObject(c.custom) ? c.custom.name : undefined;
  const name = item.type === 'custom' ? custom : c.name;
  return {
    index,
    id: typeof ownId === 'string' ? ownId : `call-${index}`,
    name: typeof name === 'string' ? name : '',
    args: undefined,
    other: item,
  };
}

/**
 * Normalises one call of any of API.md's four shapes: native `{id, name, args}`, OpenAI
 * `{id, type: 'function', function: {name, arguments}}`, Anthropic `{type: 'tool_use', id, name, input}`,
 * OpenAI Responses `{type: 'function_call', call_id, name, arguments, id?}`. Any other typed item
 * (`otherItemOf`) keeps its id and name and is marked `other`, for pass 1 to answer `invalid`.
 * The HTTP edge has already checked that `id` is a valid id.
 */
export function normalizeCall(raw: unknown, index: number): NormalCall {
  const c = isObject(raw) ? raw : {};
  const other = otherItemOf(c);
  if (other) return otherItemCall(c, index, other);
  // OpenAI Responses: the call's id is `call_id`; `id` is the item's own and is ignored.
  const ownId = c.type === 'function_call' ? c.call_id : c.id;
  const id = typeof ownId === 'string' ? ownId : `call-${index}`;
  let name: unknown = c.name;
  let rawArgs: unknown = c.args;
  if (c.type === 'function' && isObject(c.function)) {
    name = c.function.name;
    rawArgs = c.function.arguments;
  } else if (c.type === 'tool_use') {
    rawArgs = c.input;
  } else if (rawArgs === undefined && 'arguments' in c) {
    rawArgs = c.arguments;
  }
  const call: NormalCall = { index, id, name: typeof name === 'string' ? name : '', args: undefined };
  const read = readArgs(rawArgs);
  if ('args' in read) call.args = read.args;
  else call.argsProblem = read.problem;
  return call;
}

/**
 * A call as a round keeps it (for a takeover, and the Idempotency-Key's hash): as submitted,
 * unless its args could not be read; those are left out (they may be nested far too deep to
 * serialise) and the problem kept, so the call ends `invalid` alike after a takeover.
 */
export function storedCallOf(raw: unknown, call: NormalCall): unknown {
  if (call.argsProblem === undefined) return raw;
  return { id: call.id, name: call.name, unreadableArgs: call.argsProblem };
}

/**
 * What an Idempotency-Key's retry is compared by (API.md): the call as `{id, name, args}` after
 * its shape is normalised, so args sent as a JSON string and as the equal object, or one call in
 * two of the accepted shapes, are the same call. Unreadable args compare by their problem; an
 * item that is not a function call, as sent.
 */
export function comparedCallOf(raw: unknown, call: NormalCall): unknown {
  if (call.other) return raw;
  if (call.argsProblem !== undefined) return { id: call.id, name: call.name, unreadableArgs: call.argsProblem };
  return { id: call.id, name: call.name, args: call.args };
}

/** A kept call read back (`storedCallOf`'s inverse): one with unreadable args keeps its problem. */
export function restoreCall(stored: unknown, index: number): NormalCall {
  if (isObject(stored) && typeof stored.unreadableArgs === 'string' && stored.args === undefined) {
    const id = typeof stored.id === 'string' ? stored.id : `call-${index}`;
    const name = typeof stored.name === 'string' ? stored.name : '';
    return { index, id, name, args: undefined, argsProblem: stored.unreadableArgs };
  }
  return normalizeCall(stored, index);
}
