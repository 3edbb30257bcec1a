/** One line of a diff as the inbox shows it; `skip` stands for unchanged lines left out. */
export interface DiffLine {
  op: 'same' | 'del' | 'add' | 'skip';
  text: string;
}

/** Unchanged lines kept around each change. */
export const DIFF_CONTEXT = 3;
/** Past this many cells (changed old lines × changed new lines) the middle is shown as all removed, then all added. */
export const MAX_DIFF_CELLS = 4_000_000;

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** The edit script of the changed middle: longest common subsequence (dynamic programming, bounded). */
function middleOps(a: readonly string[], b: readonly string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_DIFF_CELLS || n === 0 || m === 0)
    return [...a.map((text) => ({ op: 'del' as const, text })), ...b.map((text) => ({ op: 'add' as const, text }))];
  // lcs[i][j]: length of the LCS of a[i..] and b[j..], in one flat array.
  const lcs = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number) => i * (m + 1) + j;
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[at(i, j)] =
        a[i] === b[j] ? (lcs[at(i + 1, j + 1)] ?? 0) + 1 : Math.max(lcs[at(i + 1, j)] ?? 0, lcs[at(i, j + 1)] ?? 0);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: 'same', text: a[i] as string });
      i++;
      j++;
    } else if ((lcs[at(i + 1, j)] ?? 0) >= (lcs[at(i, j + 1)] ?? 0)) out.push({ op: 'del', text: a[i++] as string });
    else out.push({ op: 'add', text: b[j++] as string });
  }
  while (i < n) out.push({ op: 'del', text: a[i++] as string });
  while (j < m) out.push({ op: 'add', text: b[j++] as string });
  return out;
}

/** Keeps DIFF_CONTEXT unchanged lines around each change; longer unchanged runs become one `skip` line. */
function withContext(ops: readonly DiffLine[]): DiffLine[] {
  const near = ops.map(() => false);
  ops.forEach((op, k) => {
    if (op.op === 'same') return;
    for (let d = -DIFF_CONTEXT; d <= DIFF_CONTEXT; d++) if (k + d >= 0 && k + d < ops.length) near[k + d] = true;
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  ops.forEach((op, k) => {
    if (near[k]) {
      if (skipped > 0) out.push({ op: 'skip', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
      skipped = 0;
      out.push(op);
    } else skipped++;
  });
  if (skipped > 0) out.push({ op: 'skip', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
  return out;
}

/** A line diff of `before` against `after` with context, common head and tail trimmed before the LCS. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const same = (text: string): DiffLine => ({ op: 'same', text });
  const ops = [
    ...a.slice(0, head).map(same),
    ...middleOps(a.slice(head, a.length - tail), b.slice(head, b.length - tail)),
    ...a.slice(a.length - tail).map(same),
  ];
  return withContext(ops);
}
