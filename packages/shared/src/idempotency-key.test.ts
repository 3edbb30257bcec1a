import { describe, expect, it } from 'vitest';
import { idempotencyKeyOf } from './idempotency-key.js';

describe('idempotencyKeyOf', () => {
  const call = { session: 's1', run: 'r1', round: 'rnd_0123456789abcdef', callIndex: 0 };

  it('is the same for the same call of the same round (a retry, a takeover, a redelivery)', () => {
    expect(idempotencyKeyOf({ ...call })).toBe(idempotencyKeyOf(call));
    expect(idempotencyKeyOf(call)).toMatch(/^td_[A-Za-z0-9_-]{32}$/);
  });

  it('differs for any other call: another index, round, run or session', () => {
    const keys = new Set([
      idempotencyKeyOf(call),
      idempotencyKeyOf({ ...call, callIndex: 1 }),
      idempotencyKeyOf({ ...call, round: 'rnd_fedcba9876543210' }),
      idempotencyKeyOf({ ...call, run: 'r2' }),
      idempotencyKeyOf({ ...call, session: 's2' }),
      // No field bleeds into the next: "s1"+"0r" is not "s10"+"r".
      idempotencyKeyOf({ ...call, session: 's10', run: 'r', round: 'x', callIndex: 0 }),
      idempotencyKeyOf({ ...call, session: 's1', run: '0r', round: 'x', callIndex: 0 }),
    ]);
    expect(keys.size).toBe(7);
  });
});
