import { MAX_ARGS_BYTES, MAX_ARGS_DEPTH } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { argsShapeProblem, normalizeCall, otherItemOf, readArgs, restoreCall, storedCallOf } from './normalize-call.js';

/** Args nested `levels` deep: `{a: {a: ... 1}}`. */
function nested(levels: number, wrap: (inner: unknown) => unknown = (a) => ({ a })): Record<string, unknown> {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = wrap(v);
  return v as Record<string, unknown>;
}

/** An args object whose JSON is exactly `bytes` bytes long. */
function argsOfBytes(bytes: number, char = 'x'): Record<string, unknown> {
  const overhead = Buffer.byteLength(JSON.stringify({ s: '' }));
  return { s: char.repeat((bytes - overhead) / Buffer.byteLength(char)) };
}

describe('normalizeCall', () => {
  describe('when the call has the native shape', () => {
    it('reads id, name and object args', () => {
      expect(normalizeCall({ id: 'c1', name: 'read_files', args: { paths: ['a.txt'] } }, 0)).toEqual({
        index: 0,
        id: 'c1',
        name: 'read_files',
        args: { paths: ['a.txt'] },
      });
    });

    it('parses args given as a JSON string of an object', () => {
      const call = normalizeCall({ id: 'c1', name: 'calculate', args: '{"expression":"1+2"}' }, 3);
      expect(call.args).toEqual({ expression: '1+2' });
      expect(call.argsProblem).toBeUndefined();
      expect(call.index).toBe(3);
    });
  });

  describe('when the call has the OpenAI chat shape', () => {
    it('reads the name and the JSON arguments from function', () => {
      const raw = {
        id: 'call_abc',
        type: 'function',
        function: { name: 'calculate', arguments: '{"expression":"2"}' },
      };
      expect(normalizeCall(raw, 0)).toEqual({ index: 0, id: 'call_abc', name: 'calculate', args: { expression: '2' } });
    });
  });

  describe('when the call has the Anthropic shape', () => {
    it('reads the name and the input object', () => {
      const raw = { type: 'tool_use', id: 'toolu_1', name: 'find_files', input: { pattern: '*.ts' } };
      expect(normalizeCall(raw, 0)).toEqual({ index: 0, id: 'toolu_1', name: 'find_files', args: { pattern: '*.ts' } });
    });
  });

  describe('when the call has the OpenAI Responses shape (v1.1)', () => {
    const raw = {
      type: 'function_call',
      id: 'fc_item',
      call_id: 'call_1',
      name: 'calculate',
      arguments: '{"expression":"3"}',
    };

    it('reads the name and the JSON arguments', () => {
      const call = normalizeCall(raw, 0);
      expect(call.name).toBe('calculate');
      expect(call.args).toEqual({ expression: '3' });
    });

    // API.md v1.1: the call's id is call_id and the item's own id is ignored.
    it('takes the call id from call_id, ignoring the item id', () => {
      expect(normalizeCall(raw, 0).id).toBe('call_1');
      const { id: _item, ...withoutItemId } = raw;
      expect(normalizeCall(withoutItemId, 0).id).toBe('call_1');
    });
  });

  describe('when the item is not a function call', () => {
    it('marks an OpenAI Chat custom tool call, keeping its id and the custom tool name', () => {
      const raw = { id: 'call_c', type: 'custom', custom: { name: 'grep', input: 'TODO' } };
      expect(normalizeCall(raw, 2)).toEqual({
        index: 2,
        id: 'call_c',
        name: 'grep',
        args: undefined,
        other: { type: 'custom', what: 'an OpenAI custom tool call', answered: true },
      });
    });

    it('takes the id of an OpenAI Responses custom tool call from call_id', () => {
      const raw = { type: 'custom_tool_call', id: 'ctc_item', call_id: 'call_9', name: 'grep', input: 'x' };
      expect(normalizeCall(raw, 0)).toMatchObject({ id: 'call_9', name: 'grep', other: { answered: true } });
    });

    it('names an Anthropic text block, which has no id, after its place, and wants no answer for it', () => {
      expect(normalizeCall({ type: 'text', text: 'Let me look.', citations: null }, 1)).toEqual({
        index: 1,
        id: 'call-1',
        name: '',
        args: undefined,
        other: { type: 'text', what: 'a text block', answered: false },
      });
    });

    it('says what reasoning items, thinking blocks and hosted tool calls are', () => {
      const whatOf = (raw: unknown) => normalizeCall(raw, 0).other?.what;
      expect(whatOf({ type: 'reasoning', id: 'rs_1', summary: [] })).toBe('a reasoning item');
      expect(whatOf({ type: 'thinking', thinking: '...', signature: 'sig' })).toBe('a thinking block');
      expect(whatOf({ type: 'web_search_call', id: 'ws_1', status: 'completed' })).toMatch(/hosted tool call/);
      expect(whatOf({ type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] })).toBe(
        'a server tool result block',
      );
      expect(whatOf({ type: 'brand_new_block' })).toBe('an item that is not a function call');
    });

    it('leaves the three call shapes and the untyped native shape alone', () => {
      expect(otherItemOf({ id: 'c', name: 'calculate', args: {} })).toBeUndefined();
      expect(otherItemOf({ id: 'c', type: 'function', function: { name: 'x', arguments: '{}' } })).toBeUndefined();
      expect(otherItemOf({ id: 'c', type: 'tool_use', name: 'x', input: {} })).toBeUndefined();
      expect(otherItemOf({ call_id: 'c', type: 'function_call', name: 'x', arguments: '{}' })).toBeUndefined();
    });

    it('cuts a very long type to 64 characters', () => {
      expect(otherItemOf({ type: 'x'.repeat(10_000) })?.type).toHaveLength(64);
    });
  });

  it('gives a call without a string name the name "", for pass 1 to answer invalid', () => {
    expect(normalizeCall({ id: 'c1', args: {} }, 0).name).toBe('');
    expect(normalizeCall({ id: 'c1', name: 42, args: {} }, 0).name).toBe('');
    expect(normalizeCall({ id: 'c1', type: 'function', function: { arguments: '{}' } }, 0).name).toBe('');
  });

  it('names a call without an id after its place in the round', () => {
    expect(normalizeCall({ name: 'calculate', args: {} }, 4).id).toBe('call-4');
  });

  it('reads a call that is not an object as one with no name and no args', () => {
    expect(normalizeCall('read_files', 1)).toEqual({ index: 1, id: 'call-1', name: '', args: {} });
  });

  it('keeps the problem with the args, not the call, so the call still gets a result', () => {
    const call = normalizeCall({ id: 'c1', name: 'calculate', args: '{not json' }, 0);
    expect(call).toMatchObject({ id: 'c1', name: 'calculate', args: undefined });
    expect(call.argsProblem).toMatch(/not valid JSON/);
  });
});

describe('readArgs', () => {
  it('reads missing, null and empty-string args as no args', () => {
    expect(readArgs(undefined)).toEqual({ args: {} });
    expect(readArgs(null)).toEqual({ args: {} });
    expect(readArgs('')).toEqual({ args: {} });
  });

  it('says the args are not valid JSON when the string does not parse', () => {
    const read = readArgs('{"expression": ');
    expect('problem' in read && read.problem).toMatch(/^args are not valid JSON \(/);
  });

  it('refuses args that are not an object, naming what they were', () => {
    const problem = (raw: unknown) => {
      const read = readArgs(raw);
      return 'problem' in read ? read.problem : undefined;
    };
    expect(problem([1, 2])).toBe('args must be a JSON object, got an array');
    expect(problem('[1, 2]')).toBe('args must be a JSON object, got an array');
    expect(problem(7)).toBe('args must be a JSON object, got a number');
    expect(problem('"text"')).toBe('args must be a JSON object, got a string');
    expect(problem('true')).toBe('args must be a JSON object, got a boolean');
    expect(problem('null')).toBe('args must be a JSON object, got null');
  });

  describe('when the args are over 256 KiB', () => {
    it('refuses a JSON string over the limit without parsing it', () => {
      const raw = JSON.stringify(argsOfBytes(MAX_ARGS_BYTES + 1));
      const read = readArgs(raw);
      expect('problem' in read && read.problem).toBe(
        `args are ${MAX_ARGS_BYTES + 1} bytes; the limit is ${MAX_ARGS_BYTES} bytes`,
      );
    });

    it('refuses an object whose JSON is over the limit', () => {
      const read = readArgs(argsOfBytes(MAX_ARGS_BYTES + 1));
      expect('problem' in read && read.problem).toMatch(/bytes; the limit is 262144 bytes/);
    });

    it('counts bytes, not characters', () => {
      const args = argsOfBytes(MAX_ARGS_BYTES + 2, 'é');
      expect(JSON.stringify(args).length).toBeLessThan(MAX_ARGS_BYTES);
      expect('problem' in readArgs(args)).toBe(true);
      expect('problem' in readArgs(JSON.stringify(args))).toBe(true);
    });
  });

  describe('when a quick upper bound of the size passes the limit', () => {
    it('accepts args whose JSON is in fact small', () => {
      const args = {
        s: 'x'.repeat(50_000),
        keys: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i])),
      };
      expect(argsShapeProblem(args)).toBeUndefined();
    });

    it('counts the bytes exactly, escapes included', () => {
      const args = { s: '\u0001'.repeat(43_690) };
      const bytes = Buffer.byteLength(JSON.stringify(args));
      expect(bytes).toBe(MAX_ARGS_BYTES + 4);
      expect(argsShapeProblem(args)).toBe(`args are ${bytes} bytes; the limit is ${MAX_ARGS_BYTES} bytes`);
    });
  });

  it('counts what a toJSON or a class instance writes, not the object it is on', () => {
    const big = 'x'.repeat(MAX_ARGS_BYTES);
    expect(argsShapeProblem({ v: { toJSON: () => big } })).toMatch(/bytes; the limit is 262144 bytes/);
    expect(argsShapeProblem({ when: new Date(0) })).toBeUndefined();
    class Blob {
      toJSON() {
        return big;
      }
    }
    expect(argsShapeProblem({ v: new Blob() })).toMatch(/bytes; the limit is 262144 bytes/);
  });

  it('accepts args of exactly 256 KiB', () => {
    expect(MAX_ARGS_BYTES).toBe(256 * 1024);
    const args = argsOfBytes(MAX_ARGS_BYTES);
    expect(readArgs(args)).toEqual({ args });
    expect(readArgs(JSON.stringify(args))).toEqual({ args });
  });
});

describe('argsShapeProblem', () => {
  describe('when the args are nested deeper than 32 levels', () => {
    it('refuses objects nested 33 deep', () => {
      expect(MAX_ARGS_DEPTH).toBe(32);
      expect(argsShapeProblem(nested(33))).toBe('args are nested deeper than 32 levels');
    });

    it('counts arrays as levels too', () => {
      expect(argsShapeProblem({ a: nested(32, (x) => [x]) })).toBe('args are nested deeper than 32 levels');
    });

    it('refuses them when they arrive as a JSON string', () => {
      const read = readArgs(JSON.stringify(nested(40)));
      expect('problem' in read && read.problem).toBe('args are nested deeper than 32 levels');
    });
  });

  it('accepts args nested exactly 32 levels', () => {
    expect(argsShapeProblem(nested(32))).toBeUndefined();
    expect(argsShapeProblem({ a: nested(31, (x) => [x]) })).toBeUndefined();
  });

  describe('when the args hold a __proto__ key', () => {
    it('refuses it at the top level', () => {
      const read = readArgs('{"__proto__": {"polluted": true}}');
      expect('problem' in read && read.problem).toBe('args contain the forbidden key "__proto__"');
    });

    it('refuses it nested in objects and arrays', () => {
      const args = JSON.parse('{"items": [{"ok": 1}, {"x": {"__proto__": {"admin": true}}}]}');
      expect(argsShapeProblem(args)).toBe('args contain the forbidden key "__proto__"');
    });
  });

  it('accepts keys that merely look like prototype keys', () => {
    expect(argsShapeProblem({ proto: 1, __proto: 2, prototype: 3, constructor: 4 })).toBeUndefined();
  });
});

describe('storedCallOf and restoreCall', () => {
  it('keeps a readable call as submitted, and reads it back as normalizeCall does', () => {
    const raw = { id: 'c1', type: 'function', function: { name: 'calculate', arguments: '{"expression":"1"}' } };
    const call = normalizeCall(raw, 0);
    expect(storedCallOf(raw, call)).toBe(raw);
    expect(restoreCall(storedCallOf(raw, call), 0)).toEqual(call);
  });

  it('leaves out args that could not be read, so a round with them can be stored, and keeps the problem', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    const raw = { id: 'c2', name: 'calculate', args: deep };
    const call = normalizeCall(raw, 3);
    const stored = storedCallOf(raw, call);
    expect(() => JSON.stringify(stored)).not.toThrow();
    expect(restoreCall(JSON.parse(JSON.stringify(stored)), 3)).toEqual(call);
    expect(call.argsProblem).toMatch(/nested deeper than 32 levels/);
  });
});
