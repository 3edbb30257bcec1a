import { SHIPPED_DEFINITIONS } from '@tool-dispatch/shared';
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
