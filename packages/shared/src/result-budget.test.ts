import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from './config.js';
import {
  artifactText,
  budgetedLength,
  budgetValueProblem,
  effectiveBudget,
  lineCount,
  MCP_PROVIDER_BUDGET,
  previewOf,
  truncatedOutput,
} from './result-budget.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('previewOf', () => {
  it('cuts after a line break in the second half of the room', () => {
    expect(previewOf('aaaa\nbbbb\ncccc\n', 12)).toBe('aaaa\nbbbb\n');
  });

  it('cuts at a character when no line break is near, never inside a surrogate pair', () => {
    const text = '🙂'.repeat(50);
    for (let room = 1; room < 40; room++) {
      const p = previewOf(text, room);
      expect(LONE_SURROGATE.test(p), `room ${room}`).toBe(false);
      expect(text.startsWith(p)).toBe(true);
    }
  });

  it('is the first part of the text and its JSON fits the room, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 0, max: 400 }), (text, room) => {
        const p = previewOf(text, room);
        expect(text.startsWith(p)).toBe(true);
        expect(JSON.stringify(p).length - 2).toBeLessThanOrEqual(room);
        expect(LONE_SURROGATE.test(p)).toBe(false);
      }),
    );
  });
});

describe('truncatedOutput', () => {
  it('fits its budget, names the artifact and says how to page with read_files', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 5000 }),
        fc.integer({ min: 1000, max: 3000 }),
        (text, budget) => {
          const out = truncatedOutput({
            text,
            length: text.length,
            artifact: { path: '.tool-results/r-0-read_files.txt', bytes: Buffer.byteLength(text) },
            budget,
            why: 'call',
          });
          expect(JSON.stringify(out).length).toBeLessThanOrEqual(budget);
          expect(out.message).toContain('.tool-results/r-0-read_files.txt');
          expect(out.message).toMatch(/read_files\(\{"paths"/);
          expect(text.startsWith(out.preview)).toBe(true);
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe('what the budget counts and the artifact holds', () => {
  const mcp = {
    content: [
      { type: 'text', text: 'one' },
      { type: 'image', data: 'AAAA' },
      { type: 'text', text: 'two' },
    ],
  };

  it('an MCP result: its text content, joined by line breaks', () => {
    expect(budgetedLength('mcp__s__t', mcp)).toBe('one\ntwo'.length);
    expect(artifactText('mcp__s__t', mcp)).toBe('one\ntwo');
  });

  it('a read of one file: its content as it is; anything else: JSON pretty-printed', () => {
    expect(artifactText('read_files', { files: [{ path: 'a', content: 'x\ny' }] })).toBe('x\ny');
    expect(
      artifactText('read_files', {
        files: [
          { path: 'a', content: 'x' },
          { path: 'b', content: 'y' },
        ],
      }),
    ).toContain('\n  "files": [');
    expect(artifactText('calculate', { value: 1 })).toBe('{\n  "value": 1\n}\n');
    expect(budgetedLength('calculate', { value: 1 })).toBe('{"value":1}'.length);
  });

  it('counts lines as read_files does', () => {
    expect([lineCount(''), lineCount('a'), lineCount('a\n'), lineCount('a\nb'), lineCount('\n\n')]).toEqual([
      0, 1, 1, 2, 2,
    ]);
  });
});

describe('budget values and defaults', () => {
  it('takes integers from 1000 to 10 000 000, naming what is wrong otherwise', () => {
    expect(budgetValueProblem(2000, 'x')).toBeUndefined();
    for (const bad of [999, 1.5, '2000', null, 10_000_001])
      expect(budgetValueProblem(bad, 'resultBudget.call')).toMatch(/resultBudget.call must be an integer/);
  });

  it('is the session’s own, else the deployment’s, else provider mcp’s, else none', () => {
    expect(effectiveBudget(undefined, {}, 'openai')).toBeUndefined();
    expect(effectiveBudget(undefined, {}, 'mcp')).toEqual(MCP_PROVIDER_BUDGET);
    expect(effectiveBudget({ call: 3000 }, { call: 4000, round: 9000 }, 'mcp')).toEqual({ call: 3000, round: 9000 });
    expect(effectiveBudget(undefined, { round: 9000 }, 'openai')).toEqual({ round: 9000 });
  });

  it('reads TD_RESULT_BUDGET_CALL and _ROUND, refusing bad values by name', () => {
    expect(resolveConfig({}, {}).resultBudget).toEqual({});
    expect(resolveConfig({}, { TD_RESULT_BUDGET_CALL: '5000', TD_RESULT_BUDGET_ROUND: '20000' }).resultBudget).toEqual({
      call: 5000,
      round: 20000,
    });
    expect(() => resolveConfig({}, { TD_RESULT_BUDGET_CALL: '12' })).toThrow(
      /TD_RESULT_BUDGET_CALL must be an integer/,
    );
    expect(() => resolveConfig({}, { TD_RESULT_BUDGET_ROUND: 'lots' })).toThrow(/TD_RESULT_BUDGET_ROUND/);
  });
});
