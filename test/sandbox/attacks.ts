import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Deployment, rand, type Session, session } from './deployment.js';

// The escape corpus (issue #40): each attack runs as one tenant's run_command and says, per
// target, whether it got there. With TD_SANDBOX=off every target must be reached (so the test can
// tell), with the sandbox on none. Limits: TD_SANDBOX_MEMORY_MB=128, PIDS=64, FILE_MB=4.

export const LIMITS = { TD_SANDBOX_MEMORY_MB: '128', TD_SANDBOX_PIDS: '64', TD_SANDBOX_FILE_MB: '4' };
const FILE_LIMIT_BYTES = 4 * 1024 * 1024;

/** A TCP listener on every address of the host that records the tag each connection sends. */
export interface Probe {
  port: number;
  tags: string[];
  server: Server;
}

export async function startProbe(): Promise<Probe> {
  const tags: string[] = [];
  const server = createServer((sock) => {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => tags.push(d.trim()));
    sock.on('error', () => {});
    setTimeout(() => sock.destroy(), 1000);
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', () => resolve()));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, tags, server };
}

/** The host's own non-loopback IPv4 address (what a sandbox with no network must not reach either). */
export function hostAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && !a.internal && a.family === 'IPv4');
  if (!found) throw new Error('the host has no non-loopback IPv4 address to probe');
  return found.address;
}

/** Host pids of live processes with `marker` as an argument. */
export function hostProcesses(marker: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').includes(marker)) continue;
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') pids.push(Number(e));
    } catch {}
  }
  return pids;
}

export interface AttackContext {
  d: Deployment;
  probe: Probe;
  a: Session;
}

export type Attack = (ctx: AttackContext) => Promise<Record<string, boolean>>;

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export const ATTACKS: [string, Attack][] = [
  [
    "reads another tenant's workspace",
    async ({ d, a }) => {
      const b = await session(d, 'b');
      const secret = `SECRET-B-${rand()}`;
      writeFileSync(path.join(b.workspace, 'secret-b.txt'), secret);
      const abs = await a.out(`cat ${q(path.join(b.workspace, 'secret-b.txt'))} 2>&1; true`);
      const found = await a.out(`find ${q(d.planted.root)} -name '*.txt' -exec cat {} + 2>&1; true`);
      return { 'by absolute path': abs.includes(secret), 'with find TD_WORKSPACE_ROOT': found.includes(secret) };
    },
  ],
  [
    "reads the worker's files and config",
    async ({ d, a }) => {
      const p = d.planted;
      const o = await a.out(`cat ${q(p.tokensFile)} ${q(p.mcpFile)} ${q(p.secretFile)} 2>&1; true`);
      return {
        TD_API_TOKENS: o.includes('"sha256"'),
        TD_MCP_CONFIG: o.includes('"mcpServers"'),
        'a file beside them': o.includes(p.secretText),
      };
    },
  ],
  [
    'reads /etc/shadow',
    async ({ a }) => {
      // API.md v1.3: credentials absent or unreadable; an empty stand-in that reads fine is neither.
      const o = await a.out('cat /etc/shadow 2>&1 && echo read-ok; true');
      return { '/etc/shadow': /^root:/m.test(o), 'opened /etc/shadow': o.includes('read-ok') };
    },
  ],
  [
    "reads the worker's environment through /proc",
    async ({ d, a }) => {
      const o = await a.out(
        `tr '\\0' '\\n' < /proc/$PPID/environ 2>&1; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; true`,
      );
      return { 'TD_SBX_MARKER of the worker': o.includes(d.planted.marker) };
    },
  ],
  [
    'sees and signals the worker',
    async ({ d, a }) => {
      const pid = d.runner.child.pid;
      const o = await a.out(`test -e /proc/${pid} && echo seen; kill -0 ${pid} 2>/dev/null && echo signalled; true`);
      return { 'sees it in /proc': o.includes('seen'), 'signals it': o.includes('signalled') };
    },
  ],
  [
    'writes outside its workspace and /tmp',
    async ({ d, a }) => {
      const beside = path.join(d.planted.dir, `written-${rand()}`);
      const inRoot = path.join(d.planted.root, a.tenant, `written-${rand()}`);
      await a.out(`echo x > ${q(beside)} 2>&1; echo x > ${q(inRoot)} 2>&1; true`);
      const reached = { "beside the worker's config": existsSync(beside), 'in TD_WORKSPACE_ROOT': existsSync(inRoot) };
      rmSync(beside, { force: true });
      rmSync(inRoot, { force: true });
      return reached;
    },
  ],
  [
    "reaches the host's loopback, Redis and the host's own address",
    async ({ d, a, probe }) => {
      const tag = `t${rand()}`;
      const targets: [string, string, number][] = [
        ['loopback', '127.0.0.1', probe.port],
        ['host-address', hostAddress(), probe.port],
      ];
      if (d.redisUrl) {
        const u = new URL(d.redisUrl);
        targets.push(['redis', u.hostname, Number(u.port)]);
      }
      const py = `import socket
for name, host, port in ${JSON.stringify(targets)}:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); s.sendall(('${tag}-' + name + '\\r\\nPING\\r\\n').encode()); print(name, 'connected')
    except Exception as e:
        print(name, 'error', type(e).__name__)
    finally:
        s.close()`;
      const o = await a.out(`python3 -c ${q(py)} 2>&1`);
      await sleep(200);
      const reached: Record<string, boolean> = {};
      for (const [name] of targets)
        reached[name] = o.includes(`${name} connected`) || probe.tags.some((t) => t.startsWith(`${tag}-${name}`));
      return reached;
    },
  ],
  [
    'keeps a process alive after its call',
    async ({ a }) => {
      const marker = `77${Date.now() % 100000}.${Math.floor(Math.random() * 1e6)}`;
      await a.out(
        `setsid sleep ${marker} > /dev/null 2>&1 < /dev/null & nohup sleep ${marker} > /dev/null 2>&1 & echo started`,
      );
      await sleep(300);
      const left = hostProcesses(marker);
      for (const pid of left) process.kill(pid, 'SIGKILL');
      return { 'a setsid/nohup sleep outlives the call': left.length > 0 };
    },
  ],
  [
    'goes over its memory limit (a concurrent call of another tenant unharmed)',
    async ({ d, a }) => {
      const b = await session(d, 'b');
      const [big, other] = await Promise.all([
        a.sh(`echo before; python3 -c "x = b'x' * (300 * 1024 * 1024); print('allocated', len(x))"`),
        b.sh('sleep 1; echo alive'),
      ]);
      if (other.status !== 'ok' || other.output.stdout !== 'alive\n')
        throw new Error(`the other tenant's concurrent call was harmed: ${JSON.stringify(other)}`);
      if (big.status === 'error') {
        // The sandbox's answer: killed whole, named, with its partial output.
        if (
          big.error.code !== 'resource_limit' ||
          big.error.details?.limit !== 'memory' ||
          big.error.details?.stdout !== 'before\n'
        )
          throw new Error(
            `over memory must end resource_limit with {limit: memory, stdout, stderr}: ${JSON.stringify(big.error)}`,
          );
        if (typeof big.error.details.stderr !== 'string') throw new Error('resource_limit details lack stderr');
      }
      return { '300 MB allocated': big.status === 'ok' && big.output.stdout.includes('allocated') };
    },
  ],
  [
    'goes over its process limit',
    async ({ a }) => {
      const py = `import os, time, errno
pids = []
err = ''
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno)); break
    if pid == 0:
        time.sleep(2); os._exit(0)
    pids.append(pid)
print('forked', len(pids), err)
for p in pids: os.kill(p, 9)`;
      const o = await a.out(`python3 -c ${q(py)} 2>&1`);
      const n = Number(/forked (\d+)/.exec(o)?.[1] ?? -1);
      if (n < 0) throw new Error(`the fork test did not report: ${o}`);
      if (n < 100 && !/EAGAIN/.test(o)) throw new Error(`forks stopped without EAGAIN: ${o}`);
      return { '100 processes at once': n === 100 };
    },
  ],
  [
    'writes a file over its file limit',
    async ({ a }) => {
      const name = `big-${rand()}`;
      await a.out(`head -c 8388608 /dev/zero > ${name} 2>&1; echo rc=$?`);
      const size = statSync(path.join(a.workspace, name)).size;
      if (size > FILE_LIMIT_BYTES && size !== 8388608) throw new Error(`odd size ${size}`);
      return { 'an 8 MB file': size === 8388608 };
    },
  ],
];
