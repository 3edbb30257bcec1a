import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisConnectionOptions } from './redis-connection.js';

describe('redisConnectionOptions (REDIS_URL and TD_REDIS_TLS_CA)', () => {
  let dir: string;
  const pem = `-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n`;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'td-ca-'));
    await writeFile(path.join(dir, 'ca.pem'), pem);
    await writeFile(path.join(dir, 'not-a-cert.txt'), 'hello');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('adds nothing to a plain redis:// URL', () => {
    expect(redisConnectionOptions('redis://127.0.0.1:6379')).toEqual({});
  });

  it('turns TLS on for rediss:// with Node roots when no CA is given', () => {
    expect(redisConnectionOptions('rediss://:pw@redis.internal:6380')).toEqual({ tls: {} });
  });

  it('trusts the CA file besides Node roots for rediss://', () => {
    const { tls } = redisConnectionOptions('rediss://redis:6380', { tlsCaFile: path.join(dir, 'ca.pem') });
    expect(tls?.ca).toEqual([...rootCertificates, pem]);
  });

  it('refuses a CA with a URL that is not rediss://, so a plain connection never passes for TLS', () => {
    expect(() => redisConnectionOptions('redis://redis:6379', { tlsCaFile: path.join(dir, 'ca.pem') })).toThrow(
      'TD_REDIS_TLS_CA is set but the Redis URL is not a rediss:// URL',
    );
  });

  it('names the file when it cannot be read or holds no certificate', () => {
    expect(() => redisConnectionOptions('rediss://r:1', { tlsCaFile: path.join(dir, 'missing.pem') })).toThrow(
      /TD_REDIS_TLS_CA: cannot read .*missing\.pem/,
    );
    expect(() => redisConnectionOptions('rediss://r:1', { tlsCaFile: path.join(dir, 'not-a-cert.txt') })).toThrow(
      /holds no PEM certificate/,
    );
  });
});
