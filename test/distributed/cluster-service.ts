import { afterAll, beforeAll } from 'vitest';
import { Api } from '../conformance/api.js';
import { type Service, startService } from '../conformance/service.js';
import { startTargetServer, type TargetServer } from '../conformance/target-server.js';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';

/** A cluster-mode service for one test file, on a 3-primary Redis Cluster of its own that the tests may kill and restart. */
export interface ClusterService {
  readonly cluster: TestRedisCluster;
  readonly service: Service;
  readonly api: Api;
}

/** Started in beforeAll (cluster, target server, coordinator and two workers) and stopped in afterAll. */
export function useClusterService(): ClusterService {
  let cluster: TestRedisCluster | undefined;
  let target: TargetServer | undefined;
  let service: Service | undefined;
  let api: Api | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    target = await startTargetServer();
    service = await startService({ mode: 'cluster', target, clusterNodes: cluster.seeds });
    api = new Api(service.base);
  }, 150_000);
  afterAll(async () => {
    await service?.stop();
    await target?.close();
    await cluster?.stop();
  });
  const need = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the cluster service is not started (beforeAll failed?)');
    return v;
  };
  return {
    get cluster() {
      return need(cluster);
    },
    get service() {
      return need(service);
    },
    get api() {
      return need(api);
    },
  };
}
