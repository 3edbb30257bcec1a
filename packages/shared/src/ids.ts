import { customAlphabet } from 'nanoid';

/** Session, run, call, tenant and idempotency-key ids (API.md). */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

const alphabet = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 16);

/** A fresh id with a readable prefix: `rnd_…`, `cf_…`. No colons, so it is a valid BullMQ job id part. */
export function newId(prefix: string): string {
  return `${prefix}_${alphabet()}`;
}
