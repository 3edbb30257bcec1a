import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './net.js';
import { withFreshPorts } from './redis-cluster.js';

const run = promisify(execFile);

/** A CA and a server certificate for 127.0.0.1 signed by it, made with `openssl` in a temp dir (never in the repo). */
export async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const f = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=td-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
  );
  await openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    f('server.key'),
    '-out',
    f('server.csr'),
  );
  await run('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ${f('san.ext')}`]);
  await openssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    f('san.ext'),
    '-out',
    f('server.pem'),
  );
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') };
}

/** A redis-server that speaks only TLS on `port` (`--port 0`), with the certificate, CA and password given, no persistence. */
function tlsServerArgs(o: {
  port: number;
  cert: string;
  key: string;
  ca: string;
  password: string;
  dir: string;
}): string[] {
  return [
    ...['--port', '0', '--tls-port', String(o.port), '--bind', '127.0.0.1'],
    ...['--tls-cert-file', o.cert, '--tls-key-file', o.key, '--tls-ca-cert-file', o.ca, '--tls-auth-clients', 'no'],
    ...['--requirepass', o.password, '--save', '', '--appendonly', 'no', '--dir', o.dir],
  ];
}

export interface TlsRedis {
  /** `rediss://:<password>@127.0.0.1:<port>` */
  url: string;
  port: number;
  password: string;
  ca: string;
  stop(): Promise<void>;
}

/** A `redis-server` that speaks only TLS (`--port 0`) and needs a password, with a fresh self-signed CA. */
export function startTlsRedis(): Promise<TlsRedis> {
  return withFreshPorts(startTlsRedisOnce);
}

async function startTlsRedisOnce(): Promise<TlsRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-tls-redis-'));
  const { ca, cert, key } = await makeCertificates(dir);
  const port = await freePort();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const child = spawn('redis-server', tlsServerArgs({ port, cert, key, ca, password, dir }), { stdio: 'ignore' });
  // A TLS port does not answer a plain PING; wait for it with a TLS client instead.
  try {
    await waitForTls(port, ca, password);
  } catch (e) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    url: `rediss://:${password}@127.0.0.1:${port}`,
    port,
    password,
    ca,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForTls(port: number, ca: string, password: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const pem = await readFile(ca, 'utf8');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = new Redis({
      host: '127.0.0.1',
      port,
      password,
      tls: { ca: pem },
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    r.on('error', () => {});
    try {
      await r.connect();
      if ((await r.ping()) === 'PONG') return;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`TLS redis-server on ${port} did not answer: ${(e as Error).message}`);
    } finally {
      r.disconnect();
    }
    await new Promise((res) => setTimeout(res, 100));
  }
}

export interface TlsRedisCluster {
  /** REDIS_CLUSTER_NODES: `rediss://:<password>@127.0.0.1:<port>` of each primary. */
  seeds: string;
  password: string;
  ca: string;
  stop(): Promise<void>;
}

/**
 * A 3-primary Redis Cluster that speaks only TLS (clients and cluster bus, `--port 0`,
 * `--tls-cluster yes`) and needs a password, with a fresh self-signed CA; formed with
 * `redis-cli --tls --cluster create`.
 */
export function startTlsRedisCluster(): Promise<TlsRedisCluster> {
  return withFreshPorts(startTlsClusterOnce);
}

async function startTlsClusterOnce(): Promise<TlsRedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'td-tls-cluster-'));
  const { ca, cert, key } = await makeCertificates(dir);
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const ports = [await freePort(), await freePort(), await freePort()];
  const busPorts = [await freePort(), await freePort(), await freePort()];
  const children = ports.map((port, i) =>
    spawn(
      'redis-server',
      [
        ...tlsServerArgs({ port, cert, key, ca, password, dir }),
        ...['--tls-cluster', 'yes', '--cluster-enabled', 'yes', '--cluster-port', String(busPorts[i])],
        ...['--cluster-config-file', `nodes-${port}.conf`, '--masterauth', password],
      ],
      { stdio: 'ignore' },
    ),
  );
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((port) => waitForTls(port, ca, password)));
    const tlsCli = ['--tls', '--cacert', ca, '-a', password, '--no-auth-warning'];
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', [...tlsCli, '--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes']);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const infos = await Promise.all(
        ports.map((p) =>
          run('redis-cli', [...tlsCli, '-p', String(p), 'cluster', 'info']).then(
            (r) => r.stdout,
            () => '',
          ),
        ),
      );
      if (infos.every((i) => /cluster_state:ok/.test(i) && /cluster_known_nodes:3/.test(i))) break;
      if (Date.now() > deadline) throw new Error('the TLS cluster did not reach cluster_state:ok within 20 s');
      await new Promise((res) => setTimeout(res, 100));
    }
    return {
      seeds: ports.map((p) => `rediss://:${password}@127.0.0.1:${p}`).join(','),
      password,
      ca,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
