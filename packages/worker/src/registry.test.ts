import { type Handler, type HandlerContext, SHIPPED_DEFINITIONS } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { createBuiltinRegistry, HandlerRegistry } from './registry.js';

describe('HandlerRegistry', () => {
  it('registers, finds and lists handlers by name', () => {
    const registry = new HandlerRegistry();
    const handler = async () => 1;
    registry.register('b_tool', handler);
    registry.register('a_tool', handler);
    expect(registry.get('a_tool')).toBe(handler);
    expect(registry.has('b_tool')).toBe(true);
    expect(registry.has('c_tool')).toBe(false);
    expect(registry.get('c_tool')).toBeUndefined();
    expect(registry.names()).toEqual(['a_tool', 'b_tool']);
  });

  it('refuses to register a name twice', () => {
    const registry = new HandlerRegistry();
    registry.register('t', async () => 1);
    expect(() => registry.register('t', async () => 2)).toThrow(/already registered/);
  });
});

describe('createBuiltinRegistry', () => {
  it('has a handler for every shipped definition except find_tools and run_tool', () => {
    const expected = SHIPPED_DEFINITIONS.map((d) => d.name)
      .filter((n) => n !== 'find_tools' && n !== 'run_tool')
      .sort();
    expect(createBuiltinRegistry().names()).toEqual(expected);
  });
});

describe('HandlerRegistry.resolve', () => {
  const ctx = (signal: AbortSignal) => ({ signal }) as unknown as HandlerContext;

  it('gives a handler that waits for a source still making up its mind, then runs what it came to know', async () => {
    let known: Handler | undefined;
    let settle = () => {};
    const pending = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const registry = new HandlerRegistry();
    registry.addSource({ get: () => known, names: () => [], pending: () => pending });
    const handler = registry.resolve('mcp__late__tool');
    expect(handler).toBeDefined();
    const answer = handler?.({ a: 1 }, ctx(new AbortController().signal));
    known = async (args) => ({ ran: args });
    settle();
    await expect(answer).resolves.toEqual({ ran: { a: 1 } });
  });

  it('fails naming the tool when the source settles without it, and stops with the call', async () => {
    const registry = new HandlerRegistry();
    registry.addSource({ get: () => undefined, names: () => [], pending: () => Promise.resolve() });
    await expect(registry.resolve('mcp__x__y')?.({}, ctx(new AbortController().signal))).rejects.toThrow(
      /no handler for mcp__x__y on this worker/,
    );
    const stopped = new HandlerRegistry();
    stopped.addSource({ get: () => undefined, names: () => [], pending: () => new Promise(() => {}) });
    const caller = new AbortController();
    const waiting = stopped.resolve('mcp__x__y')?.({}, ctx(caller.signal));
    caller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('is undefined when no source is pending, and prefers a known handler', () => {
    const registry = new HandlerRegistry();
    const own = async () => 1;
    registry.register('t', own);
    registry.addSource({ get: () => undefined, names: () => [] });
    expect(registry.resolve('t')).toBe(own);
    expect(registry.resolve('mcp__a__b')).toBeUndefined();
  });
});
