import { describe, expect, it } from 'vitest';
import { formatSseEvent } from './sse.js';

describe('formatSseEvent', () => {
  it('writes id, event and one data line, then a blank line', () => {
    const text = formatSseEvent({ id: '7', name: 'round.completed', data: { round: 'r', run: 'x' } });
    expect(text).toBe('id: 7\nevent: round.completed\ndata: {"round":"r","run":"x"}\n\n');
  });

  it('keeps newlines inside values on one data line (JSON escapes them)', () => {
    const text = formatSseEvent({ id: '1', name: 'tool.result', data: { output: 'a\nb\r\nc' } });
    expect(text.split('\n').filter((l) => l.startsWith('data:'))).toHaveLength(1);
  });

  it('strips line breaks from an id so it cannot start a new field', () => {
    expect(formatSseEvent({ id: '1\nevent: x', name: 'round.started', data: {} })).toMatch(/^id: 1event: x\n/);
  });
});
