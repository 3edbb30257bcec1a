import { describe, expect, it } from 'vitest';
import { startWhenRedisAnswers } from './redis-start.js';

describe('startWhenRedisAnswers', () => {
  it('tries again while Redis refuses or does not answer, logging each try, and returns the start', async () => {
    const lines: string[] = [];
    const errors = [new Error('Command timed out'), new Error('connect ECONNREFUSED 127.0.0.1:6390')];
    let tries = 0;
    const started = await startWhenRedisAnswers(
      async () => {
        tries += 1;
        const e = errors.shift();
        if (e) throw e;
        return 'started';
      },
      { what: 'worker', log: (l) => lines.push(l) },
    );
    expect(started).toBe('started');
    expect(tries).toBe(3);
    expect(lines).toEqual([
      'worker: Redis did not answer at start (Command timed out); trying again in 250 ms',
      'worker: Redis did not answer at start (connect ECONNREFUSED 127.0.0.1:6390); trying again in 500 ms',
    ]);
  });

  it('throws any other error at once: a bad configuration is not waited out', async () => {
    let tries = 0;
    const start = async () => {
      tries += 1;
      throw new Error('TD_PREFIX: must not contain braces');
    };
    await expect(startWhenRedisAnswers(start, { what: 'worker', log: () => {} })).rejects.toThrow(/TD_PREFIX/);
    expect(tries).toBe(1);
  });

  it('gives up with the last refusal once the wait is over', async () => {
    let tries = 0;
    const start = async () => {
      tries += 1;
      throw new Error(`Command timed out (${tries})`);
    };
    await expect(startWhenRedisAnswers(start, { what: 'worker', log: () => {}, waitMs: 600 })).rejects.toThrow(
      'Command timed out (2)',
    );
    expect(tries).toBe(2);
  });
});
