import { describe, expect, it } from 'vitest';
import { defineScript } from './lua-script.js';

const script = defineScript('probe', 1, 'return 1');

describe('unexpectedReply', () => {
  it('names the script, what it expected and what came back', () => {
    const error = script.unexpectedReply('an integer', ['x', null]);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('probe script: expected an integer, got ["x",null]');
  });

  it('quotes a missing reply as undefined', () => {
    expect(script.unexpectedReply('an integer', undefined).message).toBe(
      'probe script: expected an integer, got undefined',
    );
  });

  it('cuts a long reply short', () => {
    const message = script.unexpectedReply('an integer', 'x'.repeat(10_000)).message;
    expect(message.length).toBeLessThan(300);
    expect(message.endsWith('…')).toBe(true);
  });
});
