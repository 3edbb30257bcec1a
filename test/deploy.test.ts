/**
 * deploy/ cannot be built here (no Docker engine), so this checks what can be checked without
 * one: every YAML parses, the compose stack and the manifests hold what deploy/README.md
 * promises, the Prometheus config passes promtool, and the dashboard's queries parse and name
 * only metrics the services expose.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { checkConfig, checkPromQL } from './support/promtool.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPLOY = join(ROOT, 'deploy');

type Obj = Record<string, unknown>;
const read = (path: string) => readFileSync(join(DEPLOY, path), 'utf8');
const yamlOf = (path: string) => parse(read(path), { merge: true }) as Obj;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Metric names API.md "Operations" lists; the dashboard may use nothing else of ours. */
const METRICS = new Set([
  'td_limit_waits_total',
  'td_limit_waiting',
  'td_limit_rejections_total',
  'td_limit_wait_seconds_bucket',
  'td_limit_wait_seconds_sum',
  'td_limit_wait_seconds_count',
  'td_calls_total',
  'td_call_duration_seconds_bucket',
  'td_call_duration_seconds_sum',
  'td_call_duration_seconds_count',
  'td_rounds_in_progress',
  'td_dedupe_hits_total',
  'td_cache_hits_total',
  'td_refusals_total',
  'td_confirmations_pending',
  'td_queue_jobs',
  'td_workers_alive',
  'td_worker_executions_total',
  'td_worker_inflight',
]);

describe('deploy/compose.yaml', () => {
  const compose = yamlOf('compose.yaml');
  const services = obj(compose.services);

  it('runs Redis, Jaeger, Prometheus, Grafana, one coordinator and two workers', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['coordinator', 'grafana', 'jaeger', 'prometheus', 'redis', 'worker-1', 'worker-2'].sort(),
    );
  });

  it('runs Redis with an append-only file synced every second and no eviction', () => {
    const command = list(obj(services.redis).command).join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(list(obj(services.redis).volumes).join()).toContain(':/data');
  });

  it('builds the coordinator and workers from Dockerfiles that exist, in distributed mode, tracing to Jaeger over OTLP/HTTP', () => {
    for (const [name, dockerfile] of [
      ['coordinator', 'deploy/docker/coordinator.Dockerfile'],
      ['worker-1', 'deploy/docker/worker.Dockerfile'],
      ['worker-2', 'deploy/docker/worker.Dockerfile'],
    ] as const) {
      const service = obj(services[name]);
      const build = obj(service.build);
      expect(build.dockerfile, name).toBe(dockerfile);
      expect(resolve(DEPLOY, String(build.context)), name).toBe(resolve(ROOT));
      expect(existsSync(join(ROOT, dockerfile)), name).toBe(true);
      const env = obj(service.environment);
      expect(env.REDIS_URL, name).toBe('redis://redis:6379');
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT, name).toBe('http://jaeger:4318');
      expect(list(service.volumes), name).toContain('workspaces:/data/workspaces');
    }
    expect(obj(services.coordinator).ports).toEqual(['8080:8080']);
  });

  it('mounts only files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const volume of list(obj(service).volumes)) {
        const source = String(volume).split(':')[0] as string;
        if (source.startsWith('.')) expect(existsSync(resolve(DEPLOY, source)), `${name}: ${source}`).toBe(true);
      }
    }
  });

  it('opens Jaeger OTLP/HTTP and its UI', () => {
    const jaeger = obj(services.jaeger);
    expect(list(jaeger.ports)).toEqual(expect.arrayContaining(['16686:16686', '4318:4318']));
    expect(list(jaeger.command).join(' ')).toContain('receivers.otlp.protocols.http.endpoint=0.0.0.0:4318');
  });
});

describe('deploy/prometheus/prometheus.yml', () => {
  it('scrapes the coordinator on 8080 and each worker on 9464', () => {
    const targets = list(yamlOf('prometheus/prometheus.yml').scrape_configs).flatMap((job) =>
      list(obj(job).static_configs).flatMap((sc) => list(obj(sc).targets)),
    );
    expect(targets.sort()).toEqual(['coordinator:8080', 'worker-1:9464', 'worker-2:9464']);
  });

  it('passes promtool check config', async () => {
    const result = await checkConfig(join(DEPLOY, 'prometheus/prometheus.yml'));
    expect(result.ok, result.output).toBe(true);
  });
});

/** `${name}`, Grafana's reference to a dashboard variable or an import input. */
const grafanaVar = (name: string) => `$${'{'}${name}}`;

describe('deploy/grafana', () => {
  const dashboard = JSON.parse(read('grafana/dashboards/tool-dispatch.json')) as Obj;
  const exprs = list(dashboard.panels).flatMap((p) => list(obj(p).targets).map((t) => String(obj(t).expr)));

  it('provisions the Prometheus data source the dashboard uses, and the dashboards folder compose mounts', () => {
    const sources = list(yamlOf('grafana/provisioning/datasources/datasources.yaml').datasources).map(obj);
    const prometheus = sources.find((s) => s.type === 'prometheus');
    expect(prometheus?.url).toBe('http://prometheus:9090');
    expect(prometheus?.isDefault).toBe(true);
    const provider = obj(list(yamlOf('grafana/provisioning/dashboards/dashboards.yaml').providers)[0]);
    const grafanaVolumes = list(obj(obj(yamlOf('compose.yaml').services).grafana).volumes).map(String);
    expect(grafanaVolumes).toContain(`./grafana/dashboards:${obj(provider.options).path}:ro`);
  });

  it('names its data source through __inputs and a datasource variable, never a hard-coded uid', () => {
    const inputs = list(dashboard.__inputs).map(obj);
    expect(inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    const variable = list(obj(dashboard.templating).list)
      .map(obj)
      .find((v) => v.type === 'datasource');
    expect(variable).toMatchObject({
      name: 'datasource',
      query: 'prometheus',
      current: { value: grafanaVar('DS_PROMETHEUS') },
    });
    // Every data source reference, wherever it sits (panels, targets, variables), goes through the variable.
    const refs: unknown[] = [];
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'datasource') refs.push(value);
          else collect(value);
        }
      }
    };
    collect({ panels: dashboard.panels, templating: dashboard.templating, annotations: dashboard.annotations });
    expect(refs.length).toBeGreaterThan(list(dashboard.panels).length);
    expect(new Set(refs.map((r) => JSON.stringify(r)))).toEqual(
      new Set([JSON.stringify({ type: 'prometheus', uid: grafanaVar('datasource') })]),
    );
  });

  it('charts every metric the services expose, and no other td_ metric', () => {
    const used = new Set(exprs.flatMap((e) => e.match(/\btd_[a-z_]+\b/g) ?? []));
    expect([...used].filter((m) => !METRICS.has(m))).toEqual([]);
    const families = [...METRICS].map((m) => m.replace(/_(bucket|sum|count)$/, ''));
    expect(families.filter((f) => ![...used].some((u) => u.startsWith(f)))).toEqual([]);
  });

  it('has queries that parse as PromQL (Grafana variables filled in)', async () => {
    const filled = exprs.map((e) => e.replaceAll('$__rate_interval', '1m').replaceAll('$tool', '.*'));
    const result = await checkPromQL(filled);
    expect(result.ok, result.output).toBe(true);
  });
});

describe('deploy/docker', () => {
  const packages = readdirSync(join(ROOT, 'packages')).filter((p) =>
    existsSync(join(ROOT, 'packages', p, 'package.json')),
  );

  for (const [file, command, port] of [
    ['coordinator.Dockerfile', 'coordinator', '8080'],
    ['worker.Dockerfile', 'worker', '9464'],
  ] as const) {
    it(`${file} builds on node:20-slim with a frozen lockfile and runs bin/tool-dispatch ${command}`, () => {
      const text = read(`docker/${file}`);
      expect(text).toContain('ARG NODE_IMAGE=node:20-slim');
      expect(text).toMatch(/FROM \$\{NODE_IMAGE\} AS build[\s\S]*FROM \$\{NODE_IMAGE\} AS runtime/);
      expect(text).toContain('pnpm install --frozen-lockfile');
      expect(text).toContain('pnpm build');
      expect(text).toContain('"/app/bin/tool-dispatch"');
      expect(text).toContain(`CMD ["${command}"]`);
      expect(text).toContain(`EXPOSE ${port}`);
      expect(existsSync(join(DEPLOY, 'docker', `${file}.dockerignore`))).toBe(true);
    });

    it(`${file} copies every workspace package's manifest before installing (else --frozen-lockfile fails)`, () => {
      const text = read(`docker/${file}`);
      for (const p of packages) expect(text, p).toContain(`COPY packages/${p}/package.json packages/${p}/`);
    });
  }
});

describe('deploy/k8s', () => {
  const dir = join(DEPLOY, 'k8s');
  const docs = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => {
        expect(d.errors, f).toEqual([]);
        return { file: f, doc: obj(d.toJS()) };
      }),
    );
  const byKind = (kind: string) => docs.filter((d) => d.doc.kind === kind).map((d) => d.doc);
  const named = (kind: string, name: string) => byKind(kind).find((d) => obj(d.metadata).name === name);
  const containerOf = (deployment: Obj | undefined) =>
    obj(list(obj(obj(obj(obj(deployment).spec).template).spec).containers)[0]);

  it('parses, each document with apiVersion, kind and a name', () => {
    expect(docs.length).toBeGreaterThan(5);
    for (const { file, doc } of docs) {
      expect(doc.apiVersion, file).toBeTruthy();
      expect(doc.kind, file).toBeTruthy();
      if (doc.kind !== 'Kustomization') expect(obj(doc.metadata).name, file).toBeTruthy();
    }
  });

  it('lists every manifest in kustomization.yaml', () => {
    const resources = list(byKind('Kustomization')[0]?.resources).map(String).sort();
    expect(resources).toEqual(
      docs
        .map((d) => d.file)
        .filter((f, i, all) => f !== 'kustomization.yaml' && all.indexOf(f) === i)
        .sort(),
    );
  });

  for (const [name, port] of [
    ['tool-dispatch-coordinator', 8080],
    ['tool-dispatch-worker', 9464],
  ] as const) {
    it(`runs ${name} with /healthz liveness and /readyz readiness probes, resources and the shared env`, () => {
      const deployment = named('Deployment', name);
      expect(deployment).toBeDefined();
      const container = containerOf(deployment);
      expect(obj(obj(container.livenessProbe).httpGet).path).toBe('/healthz');
      expect(obj(obj(container.readinessProbe).httpGet).path).toBe('/readyz');
      const ports = list(container.ports).map(obj);
      const probePort = obj(obj(container.readinessProbe).httpGet).port;
      expect(ports.find((p) => p.name === probePort)?.containerPort).toBe(port);
      const resources = obj(container.resources);
      expect(Object.keys(obj(resources.requests)).sort()).toEqual(['cpu', 'memory']);
      expect(obj(resources.limits).memory).toBeTruthy();
      const configMap = obj(obj(list(container.envFrom)[0]).configMapRef).name;
      expect(named('ConfigMap', String(configMap))).toBeDefined();
      const selector = obj(obj(obj(deployment).spec).selector);
      const service = byKind('Service').find(
        (s) => obj(obj(s).spec).selector !== undefined && name === obj(s.metadata).name,
      );
      expect(obj(obj(service).spec).selector).toEqual(obj(selector).matchLabels);
    });

    it(`defines each env variable of ${name} before a $(VAR) reference to it`, () => {
      const env = list(containerOf(named('Deployment', name)).env).map(obj);
      const fromConfigMap = Object.keys(obj(named('ConfigMap', 'tool-dispatch-env')?.data));
      env.forEach((entry, i) => {
        for (const [, ref] of String(entry.value ?? '').matchAll(/\$\(([A-Z_]+)\)/g)) {
          const defined = fromConfigMap.includes(ref as string) || env.slice(0, i).some((e) => e.name === ref);
          expect(defined, `${entry.name} uses $(${ref})`).toBe(true);
        }
      });
    });
  }

  it('gives workers an autoscaling hint: an HPA on the worker Deployment', () => {
    const hpa = byKind('HorizontalPodAutoscaler')[0];
    expect(obj(obj(hpa?.spec).scaleTargetRef)).toMatchObject({ kind: 'Deployment', name: 'tool-dispatch-worker' });
    expect(Number(obj(hpa?.spec).minReplicas)).toBeGreaterThanOrEqual(1);
  });

  it('configures distributed mode with OTLP/HTTP export', () => {
    const data = obj(named('ConfigMap', 'tool-dispatch-env')?.data);
    expect(String(data.REDIS_URL)).toMatch(/^redis:\/\//);
    expect(data.OTEL_EXPORTER_OTLP_PROTOCOL).toBe('http/protobuf');
  });

  it('runs Redis with an append-only file synced every second and no eviction', () => {
    const args = list(containerOf(named('StatefulSet', 'redis')).args).join(' ');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--appendfsync everysec');
    expect(args).toContain('--maxmemory-policy noeviction');
  });
});

describe('deploy/README.md', () => {
  it('documents the Redis durability settings and how to see a round in Jaeger', () => {
    const readme = read('README.md');
    for (const words of ['appendonly', 'everysec', 'noeviction', 'Jaeger', 'execute <tool>']) {
      expect(readme).toContain(words);
    }
  });
});
