import { describe, expect, it } from 'vitest';
import { until } from './until.js';

describe('until', () => {
  it('returns the first truthy value of the check, trying again after a falsy one or a throw', async () => {
    let n = 0;
    const got = await until(
      () => {
        n++;
        if (n === 1) throw new Error('not yet');
        return n >= 3 && { n };
      },
      { what: 'the third try', intervalMs: 1 },
    );
    expect(got).toEqual({ n: 3 });
  });

  it('fails naming what it waited for, the state at the time and the check’s last error', async () => {
    let state = 'idle';
    await expect(
      until(
        () => {
          state = 'still idle';
          throw new Error('no answer');
        },
        { what: () => `an answer (state: ${state})`, timeoutMs: 30, intervalMs: 5 },
      ),
    ).rejects.toThrow(
      /^timed out after 30 ms waiting for an answer \(state: still idle\) \(the check last threw: no answer\)$/,
    );
  });
});
