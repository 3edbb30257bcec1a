import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser.js';

describe('SseParser', () => {
  it('parses events split anywhere, with CRLF, LF and comments', () => {
    const stream =
      ': hi\r\nid: 7\r\nevent: a.b\r\ndata: {"x":1}\r\n\r\nretry: 500\nid: 8\nevent: c\ndata: l1\ndata: l2\n\n';
    const parser = new SseParser();
    const got = [];
    for (let i = 0; i < stream.length; i += 3) got.push(...parser.push(stream.slice(i, i + 3)));
    expect(got).toEqual([
      { id: '7', event: 'a.b', data: '{"x":1}' },
      { id: '8', event: 'c', data: 'l1\nl2' },
    ]);
    expect(parser.retryMs).toBe(500);
  });

  it('names an event without an event field "message" and skips events without data', () => {
    const parser = new SseParser();
    expect(parser.push('event: x\n\ndata: y\n\n')).toEqual([{ id: undefined, event: 'message', data: 'y' }]);
  });

  it('waits for the LF after a CR at the end of a chunk', () => {
    const parser = new SseParser();
    expect(parser.push('data: a\r')).toEqual([]);
    expect(parser.push('\n\r\n')).toEqual([{ id: undefined, event: 'message', data: 'a' }]);
  });
});
