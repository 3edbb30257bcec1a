import { outcomeSlot, type RedisKeys } from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';

/**
 * A call's outcome slot as tests read and write it (its field of the round's outcome hash,
 * `outcomeSlot`): `get` (outcome JSON, running mark, or null), `set`, and `ttl` (the hash's PTTL).
 */
export function outcomeAt(redis: Redis, keys: RedisKeys, origin: string, callId: string) {
  const { key, field } = outcomeSlot(keys, origin, callId);
  return {
    key,
    field,
    get: () => redis.hget(key, field),
    set: (value: string) => redis.hset(key, field, value),
    ttl: () => redis.pttl(key),
  };
}
