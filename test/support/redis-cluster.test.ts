import { describe, expect, it } from 'vitest';
import { withFreshPorts } from './redis-cluster.js';

describe('withFreshPorts', () => {
  it('tries again after a failed start and returns the first success', async () => {
    let tries = 0;
    const value = await withFreshPorts(async () => {
      tries++;
      if (tries < 3) throw new Error(`port taken ${tries}`);
      return 'up';
    });
    expect(value).toBe('up');
    expect(tries).toBe(3);
  });

  it('gives up after its tries, naming every failure', async () => {
    let tries = 0;
    const failing = withFreshPorts(async () => {
      tries++;
      throw new Error(`port taken ${tries}`);
    }, 2);
    await expect(failing).rejects.toThrow(/in 2 tries.*port taken 1 \| port taken 2/);
    expect(tries).toBe(2);
  });
});
