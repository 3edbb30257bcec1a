import { defineScript } from '../../support/redis-client.js';

/** Parks a call, idempotently by inputId: a coordinator taking a round over parks the same call again. */
export const parkInputScript = defineScript(
  'parkInput',
  2,
  `--[[
  KEYS[1] pending (HASH inputId -> ParkedInput JSON)  KEYS[2] settled (HASH inputId -> settlement JSON)
  ARGV[1] inputId  ARGV[2] ParkedInput JSON  ARGV[3] TTL of the pending hash, ms
  Returns {"settled", <settlement JSON>} when the call ended already (answered while nobody
  waited, say); {"parked", <entry JSON>} when it was parked before (the entry as first stored);
  {"fresh", <entry JSON>} when this call parked it.
]]
local settled = redis.call('HGET', KEYS[2], ARGV[1])
if settled then
  return {'settled', settled}
end
local kept = redis.call('HGET', KEYS[1], ARGV[1])
if kept then
  return {'parked', kept}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
-- Never shorten a TTL another parked call set: NX for a fresh hash, GT to extend.
redis.call('PEXPIRE', KEYS[1], ARGV[3], 'NX')
redis.call('PEXPIRE', KEYS[1], ARGV[3], 'GT')
return {'fresh', ARGV[2]}
`,
);

/** How parkInput ends: the first element of its reply. */
export const ParkInputStatus = { Settled: 'settled', Parked: 'parked', Fresh: 'fresh' } as const;
export type ParkInputStatus = (typeof ParkInputStatus)[keyof typeof ParkInputStatus];

/** parkInput's reply, its shape checked; `value` is the settlement or entry JSON, undecoded. */
export interface ParkInputReply {
  status: ParkInputStatus;
  value: string;
}

const STATUSES: ReadonlySet<unknown> = new Set(Object.values(ParkInputStatus));

/** parkInput's reply as its header states it, or an error naming the script and what came back. */
export function parseParkInputReply(reply: unknown): ParkInputReply {
  if (Array.isArray(reply) && reply.length === 2) {
    const [status, value]: readonly unknown[] = reply;
    if (STATUSES.has(status) && typeof value === 'string') return { status: status as ParkInputStatus, value };
  }
  throw parkInputScript.unexpectedReply('{"settled" | "parked" | "fresh", <JSON>}', reply);
}
