import { readFileSync } from 'node:fs';
import { type ConnectionOptions, rootCertificates } from 'node:tls';

/**
 * What every Redis client of a process is given besides its URL (ioredis nodes, their duplicates,
 * BullMQ's connections, probes; a cluster's `redisOptions` takes the same object).
 */
export interface RedisConnectionOptions {
  /** TLS for a `rediss://` URL; absent for `redis://`. */
  tls?: ConnectionOptions;
  /**
   * TD_REDIS_COMMAND_TIMEOUT_MS: each command not answered within this fails ("Command timed
   * out") instead of queueing behind a node that stopped answering; on a cluster the slot map is
   * refreshed every second meanwhile. Absent: no deadline. Connections made by `duplicateClient`
   * (blocking reads, subscribers) have none.
   */
  commandTimeoutMs?: number;
}

export interface RedisConnectionSettings {
  /** TD_REDIS_TLS_CA: path of a PEM file of the CA(s) that signed the Redis server's certificate. */
  tlsCaFile?: string | undefined;
}

/**
 * The connection options for `url`: for `rediss://`, TLS that trusts Node's root CAs plus those in
 * TD_REDIS_TLS_CA (read once, here); for `redis://`, nothing. A CA given with a URL that is not
 * `rediss://` is refused, so an operator never believes a plain connection is encrypted.
 * Credentials stay in the URL (`rediss://:password@host:port` or `rediss://user:password@…`).
 */
export function redisConnectionOptions(url: string, settings: RedisConnectionSettings = {}): RedisConnectionOptions {
  const isTls = /^rediss:\/\//i.test(url);
  const caFile = settings.tlsCaFile;
  if (!isTls) {
    if (caFile) throw new Error('TD_REDIS_TLS_CA is set but the Redis URL is not a rediss:// URL');
    return {};
  }
  if (!caFile) return { tls: {} };
  let pem: string;
  try {
    pem = readFileSync(caFile, 'utf8');
  } catch (e) {
    throw new Error(`TD_REDIS_TLS_CA: cannot read ${caFile}: ${(e as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`TD_REDIS_TLS_CA: ${caFile} holds no PEM certificate`);
  return { tls: { ca: [...rootCertificates, pem] } };
}
