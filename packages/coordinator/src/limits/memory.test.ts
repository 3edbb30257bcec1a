import { expect, it } from 'vitest';
import { describeLimitsContract } from './limits.contract.js';
import { runStages } from './limits.js';
import { MemoryLimits } from './memory.js';

describeLimitsContract('MemoryLimits', async () => {
  const limits = new MemoryLimits();
  return { limits, peer: limits, cleanup: () => limits.close() };
});

it('MemoryLimits takes free places with no promise and forgets a limit once it is idle', async () => {
  const limits = new MemoryLimits();
  const ref = { session: 's', run: 'r' };
  const a = limits.tryAcquire(runStages(ref, 'serial', 2));
  expect(a).toBeTypeOf('function');
  expect(limits.tryAcquire(runStages(ref, 'serial', 2))).toBeUndefined();
  const b = limits.tryAcquire(runStages(ref, 'concurrent', 2));
  expect(limits.tryAcquire(runStages(ref, 'concurrent', 2))).toBeUndefined();
  const waiting = limits.acquire(runStages(ref, 'concurrent', 2));
  a?.();
  b?.();
  (await waiting)();
  const cancelled = new AbortController();
  const busy = limits.tryAcquire(runStages(ref, 'concurrent', 1)) as () => void;
  const behind = limits.acquire(runStages(ref, 'serial', 1), cancelled.signal);
  cancelled.abort(new Error('cancelled'));
  await expect(behind).rejects.toThrow('cancelled');
  busy();
  expect(limits.size).toBe(0);
});
