import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type McpOutput, mcpOutputOf, mcpTextOf } from './output.js';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const text = (t: string) => ({ type: 'text', text: t });
const textOf = (block: unknown) => (block as { text: string }).text;
/** The head a cut text block kept, without its `[cut: …]` note. */
const headOf = (block: unknown) => textOf(block).replace(/\n\[cut: [^\]]*\]$/, '');

describe('mcpOutputOf', () => {
  describe('when the result fits the budget', () => {
    it('returns content and structuredContent as the server gave them, without truncated', () => {
      const content = [text('hello'), { type: 'image', data: 'AAAA', mimeType: 'image/png' }];
      const structuredContent = { sum: 3 };
      const out = mcpOutputOf({ content, structuredContent }, 10_000);
      expect(out).toEqual({ content, structuredContent });
      expect(out).not.toHaveProperty('truncated');
    });

    it('keeps a result of exactly the budget whole', () => {
      const whole = { content: [text('x'.repeat(100))] };
      expect(mcpOutputOf(whole, bytes(whole))).toEqual(whole);
    });

    it('gives a result without a content list an empty one, and drops a structuredContent that is not an object', () => {
      expect(mcpOutputOf({ content: 'hi', structuredContent: [1, 2] }, 1000)).toEqual({ content: [] });
      expect(mcpOutputOf({ structuredContent: null }, 1000)).toEqual({ content: [] });
      expect(mcpOutputOf({ structuredContent: 'x' }, 1000)).toEqual({ content: [] });
    });
  });

  describe('when the result is over the budget', () => {
    const budget = 4_000;

    it('cuts a long text block, keeping its head and a [cut: …] note, and flags truncated', () => {
      const long = 'abcdefghij'.repeat(1_000);
      const out = mcpOutputOf({ content: [text(long)] }, budget);
      expect(out.truncated).toBe(true);
      expect(out.content).toHaveLength(1);
      const block = out.content[0] as { type: string; text: string };
      expect(block.type).toBe('text');
      expect(block.text).toMatch(/\n\[cut: \d+ bytes of JSON, over the \d+-byte limit of a result\]$/);
      const head = headOf(block);
      expect(head.length).toBeGreaterThan(budget / 2);
      expect(long.startsWith(head)).toBe(true);
      expect(bytes(out)).toBeLessThanOrEqual(budget);
    });

    it('keeps the blocks that fit whole and cuts the first that does not', () => {
      const out = mcpOutputOf({ content: [text('first'), text('y'.repeat(10_000))] }, budget);
      expect(out.content[0]).toEqual(text('first'));
      expect(textOf(out.content[1])).toMatch(/^y+\n\[cut: /);
      expect(bytes(out)).toBeLessThanOrEqual(budget);
    });

    it('replaces a non-text block that does not fit by a line naming its type, mime type and size', () => {
      const image = { type: 'image', data: 'A'.repeat(10_000), mimeType: 'image/png' };
      const out = mcpOutputOf({ content: [text('see the chart'), image] }, budget);
      expect(out.truncated).toBe(true);
      expect(out.content[0]).toEqual(text('see the chart'));
      expect(out.content[1]).toEqual(
        text(`[a image image/png block of ${bytes(image)} bytes was left out: over the limit of a result]`),
      );
      expect(bytes(out)).toBeLessThanOrEqual(budget);
    });

    it('names an embedded resource or an untyped block that does not fit as well', () => {
      const resource = { type: 'resource', resource: { uri: 'file:///a', text: 'z'.repeat(10_000) } };
      const out = mcpOutputOf({ content: [resource, 'q'.repeat(10_000)] }, budget);
      expect(textOf(out.content[0])).toMatch(/^\[a resource block of \d+ bytes was left out/);
      expect(textOf(out.content[1])).toMatch(/^\[a content block of \d+ bytes was left out/);
      expect(bytes(out)).toBeLessThanOrEqual(budget);
    });

    it('drops a structuredContent too big to keep and keeps a small one', () => {
      const big = { rows: 'r'.repeat(10_000) };
      const dropped = mcpOutputOf({ content: [text('ok')], structuredContent: big }, budget);
      expect(dropped).toEqual({ content: [text('ok')], truncated: true });

      const small = { sum: 42 };
      const kept = mcpOutputOf({ content: [text('s'.repeat(10_000))], structuredContent: small }, budget);
      expect(kept.structuredContent).toEqual(small);
      expect(kept.truncated).toBe(true);
      expect(bytes(kept)).toBeLessThanOrEqual(budget);
    });

    it('stays within the budget when the text is made of characters JSON escapes', () => {
      for (const ch of ['"', '\n', '\t', '\\', '\u0001', '\uD800']) {
        const out = mcpOutputOf({ content: [text(ch.repeat(10_000))] }, budget);
        expect(out.truncated).toBe(true);
        expect(bytes(out)).toBeLessThanOrEqual(budget);
        expect(headOf(out.content[0]).length).toBeGreaterThan(0);
      }
    });

    it('stays within the budget with many small blocks', () => {
      const content = Array.from({ length: 2_000 }, (_, i) => text(`line ${i}`));
      const out = mcpOutputOf({ content }, budget);
      expect(out.truncated).toBe(true);
      expect(bytes(out)).toBeLessThanOrEqual(budget);
      expect(out.content[0]).toEqual(text('line 0'));
      // What was left out is said, not silently dropped.
      expect(JSON.stringify(out.content.at(-1))).toMatch(/left out|cut/);
    });

    it('stays within the budget with many blocks that do not fit', () => {
      const image = { type: 'image', data: 'A'.repeat(5_000), mimeType: 'image/png' };
      const out = mcpOutputOf({ content: Array.from({ length: 200 }, () => image) }, budget);
      expect(out.truncated).toBe(true);
      expect(bytes(out)).toBeLessThanOrEqual(budget);
    });

    it.each([
      ['a 2-byte', 'é'],
      ['a 3-byte', '€'],
      ['a 4-byte', '🚀'],
    ])('never splits %s character at the cut', (_what, ch) => {
      // Offsets 0–3 put the cut at each position within a character.
      for (const lead of ['', 'a', 'ab', 'abc']) {
        const long = lead + ch.repeat(5_000);
        const out = mcpOutputOf({ content: [text(long)] }, budget);
        const head = headOf(out.content[0]);
        expect(head).not.toContain('\uFFFD');
        expect(head).not.toMatch(/[\uD800-\uDBFF]$/);
        expect(long.startsWith(head)).toBe(true);
        // The head takes the room there is: all of the budget but the reserve and the note.
        expect(bytes(out)).toBeGreaterThan(budget - 300);
        expect(head.length).toBeGreaterThan(lead.length);
        expect(bytes(out)).toBeLessThanOrEqual(budget);
      }
    });

    it('keeps any result within the budget, flagged truncated when it was over', () => {
      const block = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 3_000 }).map(text),
        // Any UTF-16 code units, lone surrogates and control characters among them.
        fc
          .string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 3_000 })
          .map(text),
        fc.record({ type: fc.constant('image'), data: fc.base64String({ maxLength: 3_000 }), mimeType: fc.string() }),
        fc.jsonValue({ maxDepth: 2 }),
      );
      fc.assert(
        fc.property(
          fc.array(block, { maxLength: 40 }),
          fc.option(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), { nil: undefined }),
          fc.integer({ min: 600, max: 6_000 }),
          (content, structuredContent, limit) => {
            const result = { content, ...(structuredContent ? { structuredContent } : {}) };
            const out: McpOutput = mcpOutputOf(result, limit);
            expect(bytes(out)).toBeLessThanOrEqual(Math.max(limit, bytes(result)));
            if (bytes(result) > limit) {
              expect(out.truncated).toBe(true);
              expect(bytes(out)).toBeLessThanOrEqual(limit);
            }
          },
        ),
        { numRuns: 100 },
      );
    });
  });
});

describe('mcpTextOf', () => {
  it('joins the text blocks with newlines, leaving out other blocks', () => {
    const result = { content: [text('one'), { type: 'image', data: 'AAAA' }, text('two'), text('')] };
    expect(mcpTextOf(result)).toBe('one\ntwo');
  });

  it('gives an empty text for a result without text blocks or without content', () => {
    expect(mcpTextOf({ content: [{ type: 'image', data: 'AAAA' }] })).toBe('');
    expect(mcpTextOf({})).toBe('');
    expect(mcpTextOf({ content: 'not a list' })).toBe('');
  });

  it('cuts past max characters with an ellipsis', () => {
    expect(mcpTextOf({ content: [text('x'.repeat(10))] }, 4)).toBe('xxxx…');
    expect(mcpTextOf({ content: [text('x'.repeat(4))] }, 4)).toBe('xxxx');
  });

  it('never splits a character outside the Basic Multilingual Plane at the cut', () => {
    const cut = mcpTextOf({ content: [text('a🚀🚀')] }, 2);
    expect(cut).toBe('a…');
    expect(cut).not.toMatch(/[\uD800-\uDFFF]/);
  });
});
