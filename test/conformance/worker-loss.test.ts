import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rt, uid } from './api.js';
import { tagOf, useService } from './fixture.js';
import { markedSeconds, type ProcessGroup, pidsWithArg, type Service, sleep } from './service.js';

async function waitUntil<T>(get: () => T | undefined, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} (waited ${ms} ms)`);
    await sleep(20);
  }
}

const parentOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};

/** The process among `pids` holding the TCP socket whose local port is `port` (Linux /proc). */
function socketOwner(port: number, pids: number[]): number | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(`:${hex}`) && cols[9]) inodes.add(cols[9]);
    }
  }
  return pids.find((pid) =>
    readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        return inodes.has(link.slice('socket:['.length, -1));
      } catch {
        return false;
      }
    }),
  );
}

// DESIGN.md failure semantics, which only distributed mode has (embedded mode runs handlers
// in the coordinator's own process, so there is no worker to lose): a concurrent call whose
// worker dies is retried once; a serial one is never re-run and ends worker_lost.
// Each case loses a worker, so each has a service of its own; the two run side by side.
describe.concurrent('worker processes dying mid-call (distributed mode only)', () => {
  const workerOf = (service: Service, pid: number): ProcessGroup => {
    const w = service.workers.find((x) => x.pid === pid);
    if (!w) throw new Error(`pid ${pid} is not one of the workers`);
    return w;
  };

  describe('a serial call', () => {
    const f = useService('distributed');
    it('ends a serial call whose worker was killed error/worker_lost, and never runs it again', async () => {
      const s = await f.api.session(['run_command'], { provider: 'openai', autoApprove: 'all' });
      const ws = f.service.workspace(s);
      const marked = markedSeconds(30);
      const pending = f.api.round(s, uid('run'), [
        rt('run_command', { command: `echo run >> runs.txt; sleep ${marked}` }),
      ]);
      const sleeper = await waitUntil(() => pidsWithArg(marked)[0], 10_000, 'the command never started');
      try {
        // The worker is an ancestor of the command (through the sandbox's processes, API.md v1.3).
        let owner = parentOf(sleeper);
        while (owner > 1 && !f.service.workers.some((w) => w.pid === owner)) owner = parentOf(owner);
        const worker = workerOf(f.service, owner);
        worker.signal('SIGKILL');
        const [r] = (await pending).results;
        expect(r, JSON.stringify(r)).toMatchObject({ status: 'error', error: { code: 'worker_lost' } });
        expect(r?.error?.message).toMatch(/unknown|may have/i);
        await sleep(1_000);
        expect(readFileSync(`${ws}/runs.txt`, 'utf8')).toBe('run\n');
      } finally {
        // With TD_SANDBOX=off the command would outlive its worker in a process group of its own: this test's to end.
        for (const pid of pidsWithArg(marked)) process.kill(pid, 'SIGKILL');
      }
    }, 90_000);
  });

  describe('a concurrent call', () => {
    const f = useService('distributed');
    it('retries a concurrent call whose worker was killed once, on another worker', async () => {
      const s = await f.api.session(['http_request'], { provider: 'openai' });
      const tag = tagOf('retry');
      const pending = f.api.round(s, uid('run'), [
        rt('http_request', { url: f.target.url('slow', tag, 0, { ms: '3000' }) }),
      ]);
      const first = await waitUntil(() => f.target.tag(tag).requests[0], 10_000, 'the call never reached the server');
      const live = f.service.workers.filter((w) => !w.hasExited).map((w) => w.pid);
      const port = first.remotePort ?? 0;
      const owner = socketOwner(port, live);
      expect(owner, `no worker holds the socket of port ${port}`).toBeDefined();
      workerOf(f.service, owner as number).signal('SIGKILL');
      const [r] = (await pending).results;
      expect(r, JSON.stringify(r)).toMatchObject({ status: 'ok' });
      expect(f.target.tag(tag).hits).toBe(2);
    }, 90_000);
  });
});
