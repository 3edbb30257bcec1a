import { describe, expect, it } from 'vitest';
import { resolveConfig } from './config.js';
import { ConfigError } from './errors.js';
import { parseClusterNodes, redisTargetOf } from './redis-connect.js';

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port and redis:// or rediss:// URLs, with their credentials and TLS', () => {
    expect(parseClusterNodes('127.0.0.1:7000, 10.0.0.2:7001')).toEqual([
      { host: '127.0.0.1', port: 7000, tls: false },
      { host: '10.0.0.2', port: 7001, tls: false },
    ]);
    expect(parseClusterNodes('rediss://user:p%40ss@redis-a:6380,[::1]:7002')).toEqual([
      { host: 'redis-a', port: 6380, tls: true, username: 'user', password: 'p@ss' },
      { host: '::1', port: 7002, tls: false },
    ]);
  });

  it('refuses a node that is neither, naming it, and an empty list', () => {
    for (const bad of ['redis-a', 'http://x:1', 'host:port', '://']) {
      expect(() => parseClusterNodes(bad)).toThrow(ConfigError);
      expect(() => parseClusterNodes(bad)).toThrow(JSON.stringify(bad.split(',')[0]));
    }
    expect(() => parseClusterNodes(' , ')).toThrow(/names no node/);
  });

  it('is distributed mode, and refuses REDIS_URL beside it (API.md: exit 2 saying so)', () => {
    const c = resolveConfig({}, { REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1:7001' });
    expect(c.mode).toBe('distributed');
    expect(redisTargetOf(c)).toEqual({ clusterNodes: ['127.0.0.1:7000', '127.0.0.1:7001'] });
    expect(redisTargetOf(resolveConfig({}, { REDIS_URL: 'redis://h:1' }))).toEqual({ url: 'redis://h:1' });
    expect(() => resolveConfig({}, { REDIS_URL: 'redis://h:1', REDIS_CLUSTER_NODES: 'h:2' })).toThrow(ConfigError);
    expect(() => redisTargetOf(resolveConfig({}, {}))).toThrow(/REDIS_URL .* or REDIS_CLUSTER_NODES/);
  });
});
