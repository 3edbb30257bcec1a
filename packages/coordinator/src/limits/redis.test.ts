import { connectRedis, type RedisClient } from '@tool-dispatch/shared/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../../../../test/support/redis-cluster.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { describeLimitsContract } from './limits.contract.js';
import { runStages } from './limits.js';
import { RedisLimits } from './redis.js';

let url = '';
useRedis((server) => {
  url = server.url;
});

/** Limits on their own connection, as on a separate coordinator; `kill` drops them as SIGKILL would (no release goes out). */
function limitsOn(target: { url: string } | { clusterNodes: string[] }, prefix: string, leaseMs = 5_000) {
  const connection: RedisClient = connectRedis(target);
  const limits = new RedisLimits({ redis: connection, prefix, leaseMs });
  return {
    limits,
    close: async () => {
      await limits.close();
      connection.disconnect();
    },
  };
}

describeLimitsContract('RedisLimits', async () => {
  const prefix = randomPrefix();
  const a = limitsOn({ url }, prefix);
  const b = limitsOn({ url }, prefix);
  return { limits: a.limits, peer: b.limits, cleanup: () => Promise.all([a.close(), b.close()]).then(() => {}) };
});

describe('RedisLimits leases', () => {
  it('lets go of the places and turns of a coordinator that died once its lease lapses, so the run is never stuck', async () => {
    const prefix = randomPrefix();
    const ref = { session: 's1', run: 'r1' };
    const dying = limitsOn({ url }, prefix, 400);
    const alive = limitsOn({ url }, prefix, 400);
    // The dead coordinator held the serial lane and the run's only place, and had a call waiting.
    await dying.limits.acquire(runStages(ref, 'serial', 1));
    void dying.limits.acquire(runStages(ref, 'concurrent', 1)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    let granted = 0;
    // Each releases its place as soon as it has it (the concurrent call arrived at the run's place first).
    const waits = [
      alive.limits.acquire(runStages(ref, 'serial', 1)),
      alive.limits.acquire(runStages(ref, 'concurrent', 1)),
    ].map((p) =>
      p.then((release) => {
        granted++;
        release();
      }),
    );
    await new Promise((r) => setTimeout(r, 150));
    expect(granted).toBe(0);
    await dying.close(); // no release: the process is gone
    await Promise.all(waits);
    expect(granted).toBe(2);
    await alive.close();
  });

  it('gives a coordinator taking a round over the places of the one that died, under the call’s ticket, before anyone behind', async () => {
    const prefix = randomPrefix();
    const ref = { session: 's1', run: 'r1' };
    const dying = limitsOn({ url }, prefix, 2_000);
    const other = limitsOn({ url }, prefix, 2_000);
    const heir = limitsOn({ url }, prefix, 2_000);
    await dying.limits.acquire(runStages(ref, 'serial', 5), undefined, undefined, 'rnd_1:0');
    let otherGranted = false;
    const behind = other.limits.acquire(runStages(ref, 'serial', 5)).then((release) => {
      otherGranted = true;
      return release;
    });
    await new Promise((r) => setTimeout(r, 100));
    await dying.close(); // SIGKILL: no release goes out
    // The round's new coordinator asks for the same call's places: they are still the call's.
    const resumed = await heir.limits.acquire(runStages(ref, 'serial', 5), undefined, undefined, 'rnd_1:0');
    await new Promise((r) => setTimeout(r, 2_500)); // past the dead one's lease: the heir renews it
    expect(otherGranted).toBe(false);
    resumed();
    (await behind)();
    expect(otherGranted).toBe(true);
    await Promise.all([other.close(), heir.close()]);
  });

  it('keeps the places of a coordinator that lives past many leases', async () => {
    const prefix = randomPrefix();
    const ref = { session: 's1', run: 'r1' };
    const holder = limitsOn({ url }, prefix, 300);
    const other = limitsOn({ url }, prefix, 300);
    const held = await holder.limits.acquire(runStages(ref, 'serial', 5));
    let granted = false;
    const next = other.limits.acquire(runStages(ref, 'serial', 5)).then((r) => {
      granted = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 1_500)); // five leases, renewed a third of one at a time
    expect(granted).toBe(false);
    held();
    (await next)();
    await Promise.all([holder.close(), other.close()]);
  });
});

describe('RedisLimits on a Redis Cluster', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  describeLimitsContract('RedisLimits (Cluster)', async () => {
    const prefix = randomPrefix();
    const a = limitsOn({ clusterNodes: cluster.nodes }, prefix);
    const b = limitsOn({ clusterNodes: cluster.nodes }, prefix);
    return { limits: a.limits, peer: b.limits, cleanup: () => Promise.all([a.close(), b.close()]).then(() => {}) };
  });
});
