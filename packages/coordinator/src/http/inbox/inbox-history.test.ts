import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../model.js';
import { runContext, SUMMARY_CHARS } from './inbox-history.js';

const entry = (n: number, run: string, over: Partial<HistoryEntry> = {}): HistoryEntry => ({
  id: `c${n}`,
  name: 'calculate',
  status: 'ok',
  output: { value: n },
  durationMs: 1,
  round: `rnd_${n}`,
  run,
  at: new Date(n * 1000).toISOString(),
  ...over,
});

describe('runContext', () => {
  it('keeps the run’s last results, oldest first, with outputs as JSON and errors by code and message', () => {
    const history = [
      entry(1, 'r1'),
      entry(2, 'other'),
      entry(3, 'r1', { status: 'denied', output: undefined, error: { code: 'denied', message: 'A person denied it' } }),
      entry(4, 'r1'),
    ];
    expect(runContext(history, 'r1', 2)).toEqual([
      {
        at: history[2]?.at,
        round: 'rnd_3',
        callId: 'c3',
        name: 'calculate',
        status: 'denied (denied)',
        summary: 'A person denied it',
      },
      { at: history[3]?.at, round: 'rnd_4', callId: 'c4', name: 'calculate', status: 'ok', summary: '{"value":4}' },
    ]);
  });

  it('cuts a long output', () => {
    const [line] = runContext([entry(1, 'r1', { output: { text: 'x'.repeat(1000) } })], 'r1');
    expect(line?.summary).toHaveLength(SUMMARY_CHARS);
    expect(line?.summary.endsWith('…')).toBe(true);
  });
});
