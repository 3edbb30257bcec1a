import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Namespace, Partitions, partitionSupport } from '../support/netns.js';

// The partition harness itself (issue #43): a cut really stops TCP from the namespace to Redis on
// the host, a heal brings it back, and nothing of a run is left after it, even one that crashed.
const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const support = partitionSupport();
if (!support.ok) throw new Error(`the partition tests need root, ip and iptables: ${support.why}`);

let net: Partitions;
let ns: Namespace;

beforeAll(async () => {
  net = await Partitions.create(1);
  ns = net.namespaces[0] as Namespace;
});
afterAll(async () => {
  await net?.close();
});

/** A TCP connect and PING from inside the namespace to Redis on the host end, given 1.5 s. */
async function pingFromNamespace(): Promise<string> {
  const url = net.redisUrlFor(ns);
  const script = `const u=new URL(${JSON.stringify(url)});const s=require('net').connect(+u.port,u.hostname);
s.setTimeout(1500,()=>{console.log('timeout');process.exit(0)});s.on('error',e=>{console.log('error '+e.code);process.exit(0)});
s.on('connect',()=>s.write('PING\\r\\n'));s.on('data',d=>{console.log(String(d).trim());process.exit(0)});`;
  const { stdout } = await run('ip', ['netns', 'exec', ns.name, process.execPath, '-e', script]);
  return stdout.trim();
}

describe('the partition harness', () => {
  it('reaches Redis from the namespace until a cut, not during it (both ways and outbound only), again after a heal', async () => {
    expect(await pingFromNamespace()).toBe('+PONG');
    await net.cut(ns, 'both');
    expect(await net.rules(ns)).toContain(`-A OUTPUT -d ${ns.hostAddr}/32 -j DROP`);
    expect(await net.rules(ns)).toContain(`-A INPUT -s ${ns.hostAddr}/32 -j DROP`);
    expect(await pingFromNamespace()).toBe('timeout');
    await net.heal(ns);
    expect(await pingFromNamespace()).toBe('+PONG');
    await net.cut(ns, 'outbound');
    expect(await net.rules(ns)).not.toMatch(/-A INPUT/);
    expect(await pingFromNamespace()).toBe('timeout');
    await net.heal(ns);
    expect(await pingFromNamespace()).toBe('+PONG');
  });
});

/** Starts netns-crash-child.ts (a namespace and Redis, then waits); resolves with it and what it made. */
async function startChild() {
  const child = spawn(
    process.execPath,
    ['--conditions=td-source', '--import', 'tsx', 'test/support/netns-crash-child.ts'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`the child run exited early (${code}): ${out}`)));
  });
  const [, name, hostIf, port] = line.split(' ') as [string, string, string, string];
  return { child, name, hostIf, port };
}

describe('the partition harness on a signal', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('removes everything at once when its run gets %s', async (signal) => {
    const { child, name, hostIf, port } = await startChild();
    expect((await run('ip', ['netns', 'list'])).stdout).toContain(name);
    const exited = new Promise((r) => child.once('exit', (_code, sig) => r(sig)));
    child.kill(signal);
    expect(await exited).toBe(signal);
    expect((await run('ip', ['netns', 'list'])).stdout).not.toContain(name);
    expect((await run('ip', ['-o', 'link', 'show'])).stdout).not.toContain(`${hostIf}@`);
    expect((await run('ss', ['-ltnpH', `sport = :${port}`])).stdout).not.toContain('redis-server');
  });
});

describe('the partition harness after a crash or close', () => {
  it('removes what a crashed run left (its namespace, host end, Redis) at the next start', async () => {
    const { child, name, hostIf, port } = await startChild();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect((await run('ip', ['netns', 'list'])).stdout).toContain(name);
    const redisPid = (await run('ss', ['-ltnpH', `sport = :${port}`])).stdout;
    expect(redisPid).toContain('redis-server');
    const next = await Partitions.create(1);
    try {
      expect((await run('ip', ['netns', 'list'])).stdout).not.toContain(name);
      expect((await run('ip', ['-o', 'link', 'show'])).stdout).not.toContain(`${hostIf}@`);
      expect((await run('ss', ['-ltnpH', `sport = :${port}`])).stdout).not.toContain('redis-server');
    } finally {
      await next.close();
    }
    expect((await run('ip', ['netns', 'list'])).stdout).not.toContain(next.namespaces[0]?.name);
  });

  it('leaves nothing after close: namespace, host end, Redis', async () => {
    const p = await Partitions.create(1);
    const made = p.namespaces[0] as Namespace;
    const port = p.redisPort;
    await p.close();
    expect((await run('ip', ['netns', 'list'])).stdout).not.toContain(made.name);
    expect((await run('ip', ['-o', 'link', 'show'])).stdout).not.toContain(`${made.hostIf}@`);
    expect((await run('ss', ['-ltnpH', `sport = :${port}`])).stdout).not.toContain('redis-server');
  });
});
