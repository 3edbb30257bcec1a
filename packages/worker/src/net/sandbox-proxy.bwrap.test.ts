import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRIDGE_SCRIPT } from './sandbox-bridge.js';
import { proxiedLaunch, type SandboxProxy, startSandboxProxy } from './sandbox-proxy.js';

// A real bubblewrap sandbox (new network namespace: its own loopback only) running curl, node and
// npm through proxiedLaunch. bwrap is required: without it this file fails, it does not skip.
const BWRAP = '/usr/bin/bwrap';

const resolveHost = async (host: string): Promise<LookupAddress[]> => {
  if (host === 'registry.test' || host === 'other.test') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`no such name ${host}`), { code: 'ENOTFOUND' });
};

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs argv in a fresh bwrap sandbox: no network but its loopback, an unprivileged uid, a private /tmp. */
function sandboxed(
  argv: readonly string[],
  launch?: ReturnType<typeof proxiedLaunch>,
  timeoutMs = 60_000,
  extraArgs: readonly string[] = [],
): Promise<Run> {
  const binds = (launch?.roBinds ?? []).flatMap((b) => ['--ro-bind', b.src, b.dest]);
  const args = [
    '--unshare-net',
    '--unshare-pid',
    '--unshare-user',
    '--uid',
    '65534',
    '--gid',
    '65534',
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    ...binds,
    ...extraArgs,
    '--chdir',
    '/tmp',
    '--',
    ...(launch?.argv ?? argv),
  ];
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', ...launch?.env };
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(BWRAP, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
}

let web: Server;
let port: number;
let tls: Server;
let tlsPort: number;
const requests: string[] = [];
let tarball: Buffer;
let workDir: string;

/** A registry stand-in: td-tiny's packument and its tarball, plus an echo of any other path. */
function registryAnswer(url: string, host: string): { type: string; body: Buffer } {
  if (url === '/td-tiny') {
    const packument = {
      name: 'td-tiny',
      'dist-tags': { latest: '1.0.0' },
      versions: {
        '1.0.0': {
          name: 'td-tiny',
          version: '1.0.0',
          main: 'index.js',
          dist: {
            tarball: `http://${host}/td-tiny/-/td-tiny-1.0.0.tgz`,
            shasum: createHash('sha1').update(tarball).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
          },
        },
      },
    };
    return { type: 'application/json', body: Buffer.from(JSON.stringify(packument)) };
  }
  if (url === '/td-tiny/-/td-tiny-1.0.0.tgz') return { type: 'application/octet-stream', body: tarball };
  return { type: 'text/plain', body: Buffer.from(`hello from ${url}`) };
}

beforeAll(async () => {
  expect(existsSync(BWRAP), `${BWRAP} is needed (Debian: apt-get install bubblewrap)`).toBe(true);
  workDir = await mkdtemp(join(tmpdir(), 'td-sandbox-net-test-'));
  await mkdir(join(workDir, 'package'));
  await writeFile(
    join(workDir, 'package', 'package.json'),
    JSON.stringify({ name: 'td-tiny', version: '1.0.0', main: 'index.js' }),
  );
  await writeFile(join(workDir, 'package', 'index.js'), "module.exports = 'td-tiny loaded';\n");
  execFileSync('tar', ['czf', join(workDir, 'td-tiny.tgz'), '-C', workDir, 'package']);
  tarball = await readFile(join(workDir, 'td-tiny.tgz'));
  web = createServer((req, res) => {
    requests.push(req.url ?? '');
    const answer = registryAnswer(req.url ?? '', req.headers.host ?? '');
    res.writeHead(200, { 'content-type': answer.type, 'content-length': answer.body.length });
    res.end(answer.body);
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  port = (web.address() as AddressInfo).port;
  const key = join(workDir, 'key.pem');
  const cert = join(workDir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=registry.test',
      '-addext',
      'subjectAltName=DNS:registry.test',
    ],
    { stdio: 'ignore' },
  );
  tls = createTlsServer({ key: await readFile(key), cert: await readFile(cert) }, (req, res) => {
    requests.push(`tls:${req.url}`);
    res.end(`tls hello from ${req.url}`);
  });
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
  tlsPort = (tls.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => web.close(r));
  await new Promise((r) => tls.close(r));
  await rm(workDir, { recursive: true, force: true });
});

describe('a bwrap sandbox with --unshare-net, through proxiedLaunch', () => {
  let allowed: SandboxProxy;
  let denying: SandboxProxy;
  beforeAll(async () => {
    allowed = await startSandboxProxy({ allow: [`registry.test:${port}`], httpAllow: ['registry.test'], resolveHost });
    denying = await startSandboxProxy({
      allow: [`other.test:${port}`],
      httpAllow: ['registry.test', 'other.test'],
      resolveHost,
    });
  });
  afterAll(async () => {
    await allowed.close();
    await denying.close();
  });

  it('has no route out without the proxy (the host loopback is unreachable)', async () => {
    const run = await sandboxed(['curl', '-sS', '--max-time', '5', `http://127.0.0.1:${port}/direct`]);
    expect(run.code).not.toBe(0);
    expect(requests).not.toContain('/direct');
  });

  it('lets curl reach a listed name, plain HTTP and through CONNECT', async () => {
    const plain = await sandboxed(
      ['curl', '-sS', `http://registry.test:${port}/plain`],
      proxiedLaunch(allowed, ['curl', '-sS', `http://registry.test:${port}/plain`]),
    );
    expect(plain).toMatchObject({ code: 0, stdout: 'hello from /plain' });
    const argv = ['curl', '-sS', '--proxytunnel', `http://registry.test:${port}/tunnelled`];
    const tunnelled = await sandboxed(argv, proxiedLaunch(allowed, argv));
    expect(tunnelled).toMatchObject({ code: 0, stdout: 'hello from /tunnelled' });
  });

  it('tunnels TLS to a listed name undecrypted: curl verifies the server certificate for that name', async () => {
    const allowTls = await startSandboxProxy({
      allow: [`registry.test:${tlsPort}`],
      httpAllow: ['registry.test'],
      resolveHost,
    });
    try {
      const argv = ['curl', '-sS', '--cacert', '/tmp/fixture/cert.pem', `https://registry.test:${tlsPort}/secure`];
      const run = await sandboxed(argv, proxiedLaunch(allowTls, argv), 60_000, ['--ro-bind', workDir, '/tmp/fixture']);
      expect(run.stderr).toBe('');
      expect(run).toMatchObject({ code: 0, stdout: 'tls hello from /secure' });
      const other = ['curl', '-sS', '--cacert', '/tmp/fixture/cert.pem', `https://registry.test:${port}/`];
      const denied = await sandboxed(other, proxiedLaunch(allowTls, other), 60_000, [
        '--ro-bind',
        workDir,
        '/tmp/fixture',
      ]);
      expect(denied.stderr).toMatch(/CONNECT tunnel failed, response 403/);
    } finally {
      await allowTls.close();
    }
  });

  it('gives the same name 403 when the list does not name it', async () => {
    const argv = ['curl', '-sS', '-w', '%{http_code}', `http://registry.test:${port}/denied`];
    const plain = await sandboxed(argv, proxiedLaunch(denying, argv));
    expect(plain.stdout).toContain(`registry.test:${port} is not in TD_SANDBOX_NET`);
    expect(plain.stdout).toMatch(/403$/);
    const tunnel = ['curl', '-sS', '--proxytunnel', `http://registry.test:${port}/denied`];
    const refused = await sandboxed(tunnel, proxiedLaunch(denying, tunnel));
    expect(refused.code).toBe(56);
    expect(refused.stderr).toMatch(/CONNECT tunnel failed, response 403/);
    expect(requests).not.toContain('/denied');
  });

  it('lets node reach a listed name through the proxy variables', async () => {
    const script = `const u = new URL(process.env.HTTP_PROXY); require('http').get({ host: u.hostname, port: u.port,
      path: 'http://registry.test:${port}/from-node', headers: { host: 'registry.test:${port}' } },
      (r) => { r.setEncoding('utf8'); r.on('data', (d) => process.stdout.write(d)); });`;
    const argv = ['node', '-e', script];
    const run = await sandboxed(argv, proxiedLaunch(allowed, argv));
    expect(run).toMatchObject({ code: 0, stdout: 'hello from /from-node' });
  });

  it('runs npm install of a package from a local registry allowed through the list', async () => {
    const argv = [
      'sh',
      '-c',
      [
        'mkdir -p /tmp/proj && cd /tmp/proj',
        `npm install td-tiny --registry http://registry.test:${port}/ --no-audit --no-fund --fetch-retries=0 --cache /tmp/npm-cache --loglevel=error`,
        `node -e "console.log(require('td-tiny'))"`,
      ].join(' && '),
    ];
    const run = await sandboxed(argv, proxiedLaunch(allowed, argv), 120_000);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('td-tiny loaded');
    expect(run.code).toBe(0);
    expect(requests).toContain('/td-tiny/-/td-tiny-1.0.0.tgz');
    const deniedRun = await sandboxed(argv, proxiedLaunch(denying, argv), 120_000);
    expect(deniedRun.code).not.toBe(0);
    expect(deniedRun.stderr).toMatch(/403/);
  }, 240_000);

  it.each([
    ['an exit code', 'exit 7'],
    ['output on both streams', 'echo out; echo err >&2'],
    ['death by SIGTERM', 'kill -TERM $$'],
    ['death by SIGKILL', 'kill -KILL $$'],
    ['death by SIGPIPE', 'kill -PIPE $$'],
    ['death by SIGSEGV', 'kill -SEGV $$'],
  ])('ends as the command does without the bridge: %s', async (_what, script) => {
    const argv = ['sh', '-c', script];
    const bare = await sandboxed(argv);
    const bridged = await sandboxed(argv, proxiedLaunch(allowed, argv));
    expect({ code: bridged.code, signal: bridged.signal, stdout: bridged.stdout, stderr: bridged.stderr }).toEqual({
      code: bare.code,
      signal: bare.signal,
      stdout: bare.stdout,
      stderr: bare.stderr,
    });
  });

  it('measures what the bridge adds to `true` (medians printed, alternated with node alone)', async () => {
    const bare: number[] = [];
    const node: number[] = [];
    const bridged: number[] = [];
    for (let i = 0; i < 9; i++) {
      bare.push((await sandboxed(['true'])).ms);
      node.push((await sandboxed([process.execPath, '-e', ''])).ms);
      bridged.push((await sandboxed(['true'], proxiedLaunch(allowed, ['true']))).ms);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    console.log(
      `bwrap true: ${median(bare).toFixed(1)} ms; bwrap node -e '': ${median(node).toFixed(1)} ms; ` +
        `true with the proxy bridge: ${median(bridged).toFixed(1)} ms`,
    );
    expect(median(bridged)).toBeGreaterThan(median(bare));
  }, 90_000);
});

describe('the bridge', () => {
  /** Runs the bridge on the host, listening on a free port, its socket nowhere (no connection is made). */
  function bridge(argv: string[]) {
    const child = spawn(process.execPath, ['-e', BRIDGE_SCRIPT, '0', '/nonexistent/proxy.sock', '--', ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const ready = new Promise<void>((r) => child.stdout.once('data', () => r()));
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
      (r) => child.on('close', (code, signal) => r({ code, signal, stdout, stderr })),
    );
    return { child, ready, ended };
  }

  it('forwards SIGTERM to the command, which may handle it', async () => {
    const b = bridge(['sh', '-c', 'trap "echo caught; exit 9" TERM; echo ready; while :; do sleep 0.05; done']);
    await b.ready;
    b.child.kill('SIGTERM');
    expect(await b.ended).toMatchObject({ code: 9, signal: null, stdout: 'ready\ncaught\n' });
  });

  it('dies by the signal that killed the command', async () => {
    const b = bridge(['sh', '-c', 'echo ready; exec sleep 10']);
    await b.ready;
    b.child.kill('SIGINT');
    expect(await b.ended).toMatchObject({ code: null, signal: 'SIGINT' });
  });

  it('exits 127 when the command does not exist, saying so', async () => {
    const b = bridge(['/nonexistent/cmd']);
    expect(await b.ended).toMatchObject({
      code: 127,
      stderr: expect.stringMatching(/td-sandbox-bridge: cannot run \/nonexistent\/cmd: .*ENOENT/),
    });
  });

  it('exits 125 on a bad argv', async () => {
    const child = spawn(process.execPath, ['-e', BRIDGE_SCRIPT, '0', '/x.sock', 'true']);
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(125);
  });
});
