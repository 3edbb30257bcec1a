import { describe, expect, it } from 'vitest';
import { lineDiff, MAX_DIFF_CELLS } from './line-diff.js';

const lines = (n: number, tag = 'l') => Array.from({ length: n }, (_, i) => `${tag}${i + 1}`).join('\n');

describe('lineDiff', () => {
  it('shows a changed line as removed then added, with three lines of context and the rest skipped', () => {
    const before = lines(20);
    const after = before.replace('l10', 'L10');
    expect(lineDiff(before, after)).toEqual([
      { op: 'skip', text: '6 unchanged lines' },
      { op: 'same', text: 'l7' },
      { op: 'same', text: 'l8' },
      { op: 'same', text: 'l9' },
      { op: 'del', text: 'l10' },
      { op: 'add', text: 'L10' },
      { op: 'same', text: 'l11' },
      { op: 'same', text: 'l12' },
      { op: 'same', text: 'l13' },
      { op: 'skip', text: '7 unchanged lines' },
    ]);
  });

  it('shows a new file as all added, and an emptied one as all removed', () => {
    expect(lineDiff('', 'a\nb\n')).toEqual([
      { op: 'add', text: 'a' },
      { op: 'add', text: 'b' },
    ]);
    expect(lineDiff('a\n', '')).toEqual([{ op: 'del', text: 'a' }]);
  });

  it('finds the common lines between scattered changes (a longest common subsequence)', () => {
    expect(lineDiff('a\nb\nc\nd', 'a\nx\nc\nd\ne')).toEqual([
      { op: 'same', text: 'a' },
      { op: 'del', text: 'b' },
      { op: 'add', text: 'x' },
      { op: 'same', text: 'c' },
      { op: 'same', text: 'd' },
      { op: 'add', text: 'e' },
    ]);
  });

  it('is empty-handed for equal texts but says how many lines it left out', () => {
    expect(lineDiff('a\nb', 'a\nb')).toEqual([{ op: 'skip', text: '2 unchanged lines' }]);
  });

  it('past its size bound, shows the changed middle as removed then added rather than spend the time', () => {
    const side = Math.ceil(Math.sqrt(MAX_DIFF_CELLS)) + 1;
    const out = lineDiff(`h\n${lines(side, 'a')}\nt`, `h\n${lines(side, 'b')}\nt`);
    expect(out.filter((l) => l.op === 'del')).toHaveLength(side);
    expect(out.filter((l) => l.op === 'add')).toHaveLength(side);
    expect(out.findIndex((l) => l.op === 'add')).toBeGreaterThan(out.findLastIndex((l) => l.op === 'del'));
  });
});
