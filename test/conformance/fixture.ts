import { afterAll, beforeAll, describe } from 'vitest';
import { startRedis, type TestRedis } from '../support/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { Api } from './api.js';
import { dropRedisPrefix, MODES, type Mode, type Service, startService } from './service.js';
import { startTargetServer, type TargetServer } from './target-server.js';

/** Startup of a service (and its Redis) may take a while on a loaded 2-core machine. */
export const START_HOOK_TIMEOUT_MS = 150_000;

export interface Fixture {
  readonly service: Service;
  readonly api: Api;
  /** The server TD_HTTP_ALLOW names (and the fake SearxNG). */
  readonly target: TargetServer;
  /** A loopback server NOT in TD_HTTP_ALLOW: nothing may ever reach it. */
  readonly canary: TargetServer;
  readonly mode: Mode;
}

export interface FixtureOptions {
  env?: Record<string, string | undefined>;
  /** The API token the client sends (set TD_API_TOKEN in env too). */
  token?: string;
  /** Worker processes in distributed mode (default 2). */
  workers?: number;
  /** Environment derived from the two servers' ports. */
  envFor?: (servers: { target: TargetServer; canary: TargetServer }) => Record<string, string | undefined>;
}

/**
 * One service of `mode` for the enclosing describe block: started in beforeAll (real
 * processes; a Redis from startRedis() in distributed mode) and stopped in afterAll.
 */
export function useService(mode: Mode, options: FixtureOptions = {}): Fixture {
  let service: Service | undefined;
  let api: Api | undefined;
  let target: TargetServer | undefined;
  let canary: TargetServer | undefined;
  let redis: TestRedis | undefined;
  let cluster: TestRedisCluster | undefined;
  beforeAll(async () => {
    target = await startTargetServer();
    canary = await startTargetServer();
    if (mode === 'distributed') redis = await startRedis();
    if (mode === 'cluster') cluster = await startRedisCluster();
    const env = { ...options.env, ...options.envFor?.({ target, canary }) };
    service = await startService({
      mode,
      target,
      env,
      ...(redis ? { redisUrl: redis.url } : {}),
      ...(cluster ? { clusterNodes: cluster.seeds } : {}),
      ...(options.workers ? { workers: options.workers } : {}),
    });
    api = new Api(service.base, options.token);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await service?.stop();
    if (redis && service?.prefix && redis.source === 'REDIS_URL')
      await dropRedisPrefix(redis.url, service.prefix).catch(() => undefined);
    await redis?.stop();
    await cluster?.stop();
    await target?.close();
    await canary?.close();
  }, START_HOOK_TIMEOUT_MS);
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not started (beforeAll failed?)`);
    return v;
  };
  return {
    mode,
    get service() {
      return need(service, 'the service');
    },
    get api() {
      return need(api, 'the service');
    },
    get target() {
      return need(target, 'the target server');
    },
    get canary() {
      return need(canary, 'the canary server');
    },
  };
}

/** A tag for the target server's paths, unique per test. */
export const tagOf = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * The suite's shape: `body` once per mode (same tests, parameterised by mode). The two modes
 * run side by side, each against its own service, and the tests of one mode one after another
 * (vitest gives a 2-core machine one worker, and these tests mostly wait on processes).
 */
export function describeModes(title: string, body: (mode: Mode) => void): void {
  describe.concurrent.each(MODES)('%s mode', (mode) => {
    describe.sequential(title, () => body(mode));
  });
}
